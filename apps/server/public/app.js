// The Keepsake demo: sessions, streaming runs, cancel, undo/retry, memory. A run lives on
// the server, not in the page: reloading mid-stream re-reads the session, finds its pending
// turn and follows the run's journal again from the start.
import { ApiError, api, StaleReplyError, storedToken, storeToken } from './api.js';
import { LiveTurn, memoryItem, renderSession, sessionListItem, textOf } from './render.js';
import { followRun } from './run-stream.js';

const $ = (id) => document.getElementById(id);
const ui = {
  layout: $('layout'),
  info: $('server-info'),
  sidebarToggle: $('sidebar-toggle'),
  memoryToggle: $('memory-toggle'),
  newChat: $('new-chat'),
  sessionList: $('session-list'),
  loadMore: $('load-more'),
  sessionsEmpty: $('sessions-empty'),
  title: $('chat-title'),
  renameButton: $('rename-button'),
  renameForm: $('rename-form'),
  renameInput: $('rename-input'),
  renameCancel: $('rename-cancel'),
  undo: $('undo-button'),
  retry: $('retry-button'),
  remove: $('delete-button'),
  transcript: $('transcript'),
  status: $('stream-status'),
  composer: $('composer'),
  input: $('composer-input'),
  send: $('send-button'),
  cancel: $('cancel-button'),
  memoryList: $('memory-list'),
  memoryEmpty: $('memory-empty'),
  signIn: $('sign-in'),
  signInForm: $('sign-in-form'),
  tokenInput: $('token-input'),
  signInError: $('sign-in-error'),
  signOut: $('sign-out'),
};

const state = {
  sessions: [],
  nextCursor: null,
  session: null,
  /** { runId, follower, live } while a run of the current session is followed. */
  run: null,
  busy: false,
};

function setStatus(text) {
  ui.status.textContent = text;
}

function showError(error) {
  // A reply for the user who signed out meanwhile: nothing to show, nothing went wrong.
  if (error instanceof StaleReplyError) return;
  if (error instanceof ApiError && error.status === 401) {
    openSignIn('Your token was not accepted.');
    return;
  }
  setStatus(error instanceof Error ? error.message : String(error));
}

function updateControls() {
  const hasSession = state.session !== null;
  const streaming = isStreaming();
  const hasTurn = hasSession && state.session.messages.some((message) => message.role === 'user');
  ui.send.disabled = streaming || state.busy;
  ui.cancel.hidden = !streaming;
  ui.renameButton.disabled = !hasSession || state.busy;
  ui.remove.disabled = !hasSession || state.busy;
  ui.undo.disabled = !hasTurn || streaming || state.busy;
  ui.retry.disabled = !hasTurn || streaming || state.busy;
  ui.title.textContent = hasSession ? state.session.title || 'Untitled' : 'No chat selected';
}

// ── Sessions ───────────────────────────────────────────────────────────────────────

async function loadSessions({ append = false } = {}) {
  const query = append && state.nextCursor ? `?cursor=${encodeURIComponent(state.nextCursor)}` : '';
  const page = await api(`/sessions${query}`);
  state.sessions = append ? [...state.sessions, ...page.sessions] : page.sessions;
  state.nextCursor = page.nextCursor;
  renderSessionList();
}

function renderSessionList() {
  ui.sessionList.replaceChildren(
    ...state.sessions.map((summary) =>
      sessionListItem(summary, {
        current: summary.id === state.session?.id,
        live: summary.pending,
        onSelect: (id) => void selectSession(id).catch(showError),
      }),
    ),
  );
  ui.loadMore.hidden = state.nextCursor === null;
  ui.sessionsEmpty.hidden = state.sessions.length > 0;
}

/** No chat on screen: nothing selected, nothing followed. */
function clearChat() {
  stopFollowing();
  state.session = null;
  ui.transcript.replaceChildren();
  renderSessionList();
  updateControls();
}

async function selectSession(id) {
  stopFollowing();
  ui.layout.classList.remove('sidebar-open');
  let session;
  try {
    ({ session } = await api(`/sessions/${encodeURIComponent(id)}`));
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 404)) throw error;
    // A link to a chat that is gone (or another token's): show that, not the last chat.
    clearChat();
    history.replaceState(null, '', '#');
    setStatus(`There is no chat “${id}”: it may have been deleted.`);
    return;
  }
  state.session = session;
  if (location.hash !== `#/s/${id}`) history.replaceState(null, '', `#/s/${id}`);
  renderSession(ui.transcript, session);
  renderSessionList();
  // Loading can repair a crashed turn (recovery): refresh a summary that no longer matches.
  const summary = state.sessions.find((entry) => entry.id === id);
  if (
    summary &&
    (summary.pending !== (session.pending !== null) ||
      summary.messageCount !== session.messages.length)
  ) {
    void loadSessions().catch(() => undefined);
  }
  setStatus('');
  updateControls();
  if (session.pending) {
    // Reloaded (or switched back) mid-stream: follow the run from its first record.
    startFollowing(session.pending.streamId, textOf(session.pending.userMessage.content));
    return;
  }
  const last = session.messages.at(-1);
  if (last?.marker?.wording === 'pending-retry' && last.marker.runId) {
    // Recovered while output may still arrive (F2): the run's stream ends once the marker
    // is final, and the transcript is read again then.
    startFollowing(last.marker.runId, null, { watchOnly: true });
  }
}

async function newChat() {
  const previousSessionId = state.session?.id;
  const { session } = await api('/sessions', {
    method: 'POST',
    body: previousSessionId ? { previousSessionId } : {},
  });
  await loadSessions();
  await selectSession(session.id);
  ui.input.focus();
  // The previous chat's memory is committed in the background at this boundary.
  if (previousSessionId) scheduleMemoryRefresh();
}

// ── Runs ───────────────────────────────────────────────────────────────────────────

/**
 * Follows a run; `userText` is null when its user turn is already on screen. A `watchOnly`
 * follow (a recovered run whose marker is not final yet) does not hold the composer: the
 * session already takes the next message.
 */
function startFollowing(runId, userText, { watchOnly = false } = {}) {
  const live = new LiveTurn(ui.transcript, userText);
  const sessionId = state.session.id;
  const follower = followRun({
    sessionId,
    runId,
    onRecord: (record) => live.apply(record),
    onStatus: (status) => {
      if (watchOnly) return;
      setStatus(status === 'live' ? 'Streaming…' : 'Connection lost — resuming from the journal…');
    },
    onEnd: (end) => void finishRun(sessionId, runId, end).catch(showError),
  });
  state.run = { runId, follower, live, watchOnly };
  updateControls();
}

/** Whether a run of the current chat is streaming (a watch-only follow is not). */
function isStreaming() {
  return state.run !== null && !state.run.watchOnly;
}

function stopFollowing() {
  state.run?.follower.stop();
  state.run = null;
}

async function finishRun(sessionId, runId, end) {
  if (state.run?.runId !== runId) return;
  state.run.live.closeText();
  state.run = null;
  const labels = {
    completed: '',
    'interrupted-by-user': 'Cancelled.',
    'interrupted-by-crash': crashLabel(end.reason === 'no-journal' ? 'neutral' : null),
    errored: 'The run failed.',
  };
  setStatus(labels[end.terminalState] ?? (end.error ? end.error.message : ''));
  // The transcript is written as the run ends; re-read it until the run's pending turn is gone.
  let shown = null;
  for (let attempt = 0; attempt < 20; attempt++) {
    if (state.session?.id !== sessionId) return;
    const { session } = await api(`/sessions/${encodeURIComponent(sessionId)}`);
    if (session.pending?.streamId !== runId || attempt === 19) {
      state.session = session;
      renderSession(ui.transcript, session);
      shown = session;
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
  updateControls();
  await loadSessions();
  if (shown !== null && end.terminalState === 'interrupted-by-crash') {
    await watchMarker(sessionId, runId, shown);
  }
}

/** What the page says of a run another instance found dead, by its marker's wording (F1, F2). */
function crashLabel(wording) {
  return wording === 'recovered'
    ? 'The run was interrupted; its output was recovered.'
    : 'The run was interrupted before it sent anything.';
}

function markerOf(session, runId) {
  return session.messages.findLast((message) => message.marker?.runId === runId)?.marker ?? null;
}

/**
 * F2: a run that died before its first record ends with a marker that says its output may
 * still arrive (`pending-retry`); a load one recovery grace later makes it final. The page
 * keeps looking (each look is a load, which is what moves recovery on) while the session is
 * on screen and nothing else happened in it, so the final marker shows without a reload.
 */
async function watchMarker(sessionId, runId, session) {
  let current = session;
  for (let look = 0; look < 600; look++) {
    const marker = markerOf(current, runId);
    if (marker !== null) setStatus(crashLabel(marker.wording));
    if (marker?.wording !== 'pending-retry') return;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    if (state.session?.id !== sessionId || state.run !== null) return;
    const { session: next } = await api(`/sessions/${encodeURIComponent(sessionId)}`);
    if (state.session?.id !== sessionId || state.run !== null) return;
    current = next;
    state.session = next;
    renderSession(ui.transcript, next);
  }
}

/** A key of 128 random bits (crypto.randomUUID needs a secure context; this does not). */
function idempotencyKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
}

/**
 * Posts a message, retrying when the reply was lost (a network error, a 5xx) with the same
 * Idempotency-Key: the server answers a retry of a send it stored with the run it started
 * (200), so a retry never asks the question twice.
 */
async function sendOnce(sessionId, content) {
  const key = idempotencyKey();
  const attempts = 3;
  for (let attempt = 1; ; attempt++) {
    try {
      return await api(`/sessions/${sessionId}/messages`, {
        method: 'POST',
        body: { content },
        headers: { 'idempotency-key': key },
      });
    } catch (error) {
      const retryable = !(error instanceof ApiError) || error.status >= 500;
      if (!retryable || attempt === attempts || error instanceof StaleReplyError) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500 * attempt));
    }
  }
}

async function send(content) {
  stopFollowing();
  if (state.session === null) {
    const { session } = await api('/sessions', { method: 'POST', body: {} });
    state.session = session;
    history.replaceState(null, '', `#/s/${session.id}`);
  }
  const session = state.session;
  if (session.messages.length === 0 && (session.title === 'New chat' || session.title === '')) {
    const title = content.trim().replace(/\s+/g, ' ').slice(0, 60);
    const renamed = await api(`/sessions/${session.id}`, { method: 'PATCH', body: { title } });
    state.session = renamed.session;
  }
  const started = await sendOnce(session.id, content);
  ui.input.value = '';
  startFollowing(started.runId, content);
  await loadSessions();
}

async function cancel() {
  if (!isStreaming() || state.session === null) return;
  const { runId } = state.run;
  const sessionId = state.session.id;
  setStatus('Cancelling…');
  const outcome = await api(`/sessions/${sessionId}/cancel`, {
    method: 'POST',
    body: { runId },
  });
  // Cancelled: the run's stream ends with its cancel record. Not cancelled: the run had
  // ended already (finished, or recovered after a crash): show the chat as it stands.
  if (outcome.cancelled || state.run?.runId !== runId) return;
  const { session } = await api(`/sessions/${encodeURIComponent(sessionId)}`);
  if (state.session?.id !== sessionId || session.pending?.streamId === runId) return;
  await selectSession(sessionId);
  setStatus('The run had already ended.');
}

async function undo() {
  const { session } = await api(`/sessions/${state.session.id}/undo`, { method: 'POST' });
  state.session = session;
  renderSession(ui.transcript, session);
  setStatus('Removed the last turn.');
  updateControls();
}

async function retry() {
  const last = [...state.session.messages].reverse().find((message) => message.role === 'user');
  const started = await api(`/sessions/${state.session.id}/retry`, { method: 'POST' });
  const { session } = await api(`/sessions/${state.session.id}`);
  state.session = session;
  renderSession(ui.transcript, session);
  startFollowing(started.runId, last ? textOf(last.content) : '');
}

async function rename(title) {
  const { session } = await api(`/sessions/${state.session.id}`, {
    method: 'PATCH',
    body: { title },
  });
  state.session.title = session.title;
  updateControls();
  await loadSessions();
}

async function removeSession() {
  if (!confirm(`Delete “${state.session.title}”? This cannot be undone.`)) return;
  stopFollowing();
  await api(`/sessions/${state.session.id}`, { method: 'DELETE' });
  state.session = null;
  history.replaceState(null, '', '#');
  ui.transcript.replaceChildren();
  await loadSessions();
  updateControls();
  await refreshMemory();
}

// ── Memory ─────────────────────────────────────────────────────────────────────────

async function refreshMemory() {
  const { records } = await api('/memory');
  ui.memoryList.replaceChildren(...records.map(memoryItem));
  ui.memoryEmpty.hidden = records.length > 0;
}

function scheduleMemoryRefresh() {
  for (const delayMs of [300, 1500]) {
    setTimeout(() => void refreshMemory().catch(() => undefined), delayMs);
  }
}

// ── Sign-in and start ──────────────────────────────────────────────────────────────

/**
 * Forgets the token and everything of its user on screen, before the sign-in dialog shows.
 * Replies to the requests still on their way are that user's too: `api` drops them
 * (StaleReplyError), so none of them fills the list or the chat again.
 */
function signOut() {
  storeToken(null);
  // Emptied first, so that clearChat renders an empty list, not the user's once more.
  state.sessions = [];
  state.nextCursor = null;
  clearChat();
  ui.memoryList.replaceChildren();
  ui.memoryEmpty.hidden = false;
  history.replaceState(null, '', '#');
  setStatus('');
  openSignIn('Signed out.');
}

function openSignIn(message = '') {
  ui.signInError.textContent = message;
  if (!ui.signIn.open) ui.signIn.showModal();
  ui.tokenInput.focus();
}

async function start() {
  const info = await api('/info');
  ui.info.textContent = `agent: ${info.agent} · backend: ${info.backend} · auth: ${info.auth}`;
  ui.signOut.hidden = info.auth !== 'token';
  if (info.auth === 'token' && !storedToken()) {
    openSignIn();
    return;
  }
  await loadSessions();
  await refreshMemory();
  const match = /^#\/s\/([A-Za-z0-9_-]{1,128})$/.exec(location.hash);
  if (match) await selectSession(match[1]);
  updateControls();
}

function guard(action) {
  return async (...args) => {
    if (state.busy) return;
    state.busy = true;
    updateControls();
    try {
      await action(...args);
    } catch (error) {
      showError(error);
    } finally {
      state.busy = false;
      updateControls();
    }
  };
}

ui.composer.addEventListener('submit', (event) => {
  event.preventDefault();
  const content = ui.input.value;
  if (content.trim().length === 0 || isStreaming()) return;
  void guard(send)(content);
});
ui.input.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    ui.composer.requestSubmit();
  } else if (event.key === 'Escape' && isStreaming()) {
    void cancel().catch(showError);
  }
});
ui.cancel.addEventListener('click', () => void cancel().catch(showError));
ui.signOut.addEventListener('click', signOut);
ui.newChat.addEventListener('click', guard(newChat));
ui.loadMore.addEventListener(
  'click',
  guard(() => loadSessions({ append: true })),
);
ui.undo.addEventListener('click', guard(undo));
ui.retry.addEventListener('click', guard(retry));
ui.remove.addEventListener('click', guard(removeSession));
ui.renameButton.addEventListener('click', () => {
  ui.renameInput.value = state.session?.title ?? '';
  ui.renameForm.hidden = false;
  ui.title.hidden = true;
  ui.renameInput.focus();
  ui.renameInput.select();
});
const closeRename = () => {
  ui.renameForm.hidden = true;
  ui.title.hidden = false;
  ui.renameButton.focus();
};
ui.renameCancel.addEventListener('click', closeRename);
ui.renameInput.addEventListener('keydown', (event) => {
  if (event.key === 'Escape') closeRename();
});
ui.renameForm.addEventListener('submit', (event) => {
  event.preventDefault();
  const title = ui.renameInput.value.trim();
  closeRename();
  if (title.length > 0) void guard(rename)(title);
});
ui.sidebarToggle.addEventListener('click', () => {
  const open = ui.layout.classList.toggle('sidebar-open');
  ui.sidebarToggle.setAttribute('aria-expanded', String(open));
});
const syncMemoryToggle = () => {
  const shown = getComputedStyle($('memory-panel')).display !== 'none';
  ui.memoryToggle.setAttribute('aria-expanded', String(shown));
};
ui.memoryToggle.addEventListener('click', () => {
  ui.layout.classList.toggle('memory-toggled');
  syncMemoryToggle();
});
window.addEventListener('resize', syncMemoryToggle);
syncMemoryToggle();
ui.signInForm.addEventListener('submit', () => {
  storeToken(ui.tokenInput.value.trim());
  ui.tokenInput.value = '';
  void start().catch(showError);
});
window.addEventListener('hashchange', () => {
  const match = /^#\/s\/([A-Za-z0-9_-]{1,128})$/.exec(location.hash);
  if (match && match[1] !== state.session?.id) void guard(selectSession)(match[1]);
});

void start().catch(showError);
