// Renders sessions and live runs into the transcript list. Everything user-provided goes
// through textContent, never innerHTML.

const markerIcons = { interrupted: '⚠', cancelled: '■', errored: '✕', 'tool-limit': '✕' };

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

export function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (part.type === 'text' ? (part.text ?? '') : '')).join('');
}

function badge(text, className = '') {
  return element('span', `badge ${className}`.trim(), text);
}

/**
 * One stored message. `partialBadge` is false for all but the last partial message of a
 * run: a cancelled turn kept as reasoning plus answer is one partial answer, not two.
 */
export function messageItem(message, { partialBadge = true } = {}) {
  if (message.marker) return markerItem(message);
  const item = element('li', `message ${message.role}`);
  item.dataset.messageId = message.id;
  const badges = element('div', 'badges');
  if (message.recovered) {
    item.dataset.recovered = 'true';
    badges.append(badge('recovered from journal', 'recovered'));
  }
  if (message.partial) {
    item.dataset.partial = 'true';
    if (partialBadge) badges.append(badge('partial'));
  }
  if (badges.childElementCount > 0) item.append(badges);
  if (message.reasoning) item.append(reasoningBlock(message.reasoning));
  const text = textOf(message.content);
  if (text.length > 0) item.append(element('div', 'bubble', text));
  return item;
}

export function markerItem(message) {
  const type = message.marker.type;
  const item = element('li', `marker ${type}`);
  item.setAttribute('role', 'note');
  item.dataset.markerType = type;
  item.dataset.markerWording = message.marker.wording;
  item.append(element('span', 'marker-icon', markerIcons[type] ?? '•'));
  item.append(element('span', 'marker-text', textOf(message.content)));
  return item;
}

export function reasoningBlock(text) {
  const details = element('details', 'reasoning');
  details.append(element('summary', '', 'Reasoning'));
  details.append(element('p', '', text));
  return details;
}

export function toolItem(call) {
  const item = element('li', 'tool-call');
  item.dataset.toolCallId = call.id;
  const details = element('details');
  const summary = element('summary');
  summary.append(element('span', 'tool-label', 'tool'), element('span', 'tool-name', call.name));
  const state = element('span', 'tool-state');
  summary.append(state);
  details.append(summary);
  const args = element('pre', 'tool-args');
  const result = element('pre', 'tool-result');
  details.append(args, result);
  item.append(details);
  updateToolItem(item, call);
  return item;
}

export function updateToolItem(item, call) {
  item.classList.toggle('errored', call.isError === true);
  item.querySelector('.tool-state').textContent = call.done
    ? call.isError
      ? 'failed'
      : 'done'
    : 'running…';
  item.querySelector('.tool-args').textContent = `args: ${JSON.stringify(call.args ?? null)}`;
  item.querySelector('.tool-result').textContent = call.done
    ? `result: ${JSON.stringify(call.result ?? null)}`
    : '';
}

/**
 * The stored transcript, with each tool call placed after the message it followed, opened
 * at its latest message (where a conversation continues).
 */
export function renderSession(list, session) {
  list.replaceChildren();
  const lastPartialOfRun = new Map();
  for (const message of session.messages) {
    if (message.partial) lastPartialOfRun.set(message.runId ?? message.id, message.id);
  }
  const partialBadges = new Set(lastPartialOfRun.values());
  const callsByMessage = new Map();
  const looseCalls = [];
  const messageIds = new Set(session.messages.map((message) => message.id));
  for (const call of session.toolCalls) {
    if (call.messageId && messageIds.has(call.messageId)) {
      const calls = callsByMessage.get(call.messageId) ?? [];
      calls.push(call);
      callsByMessage.set(call.messageId, calls);
    } else {
      looseCalls.push(call);
    }
  }
  for (const message of session.messages) {
    const runCalls = looseCalls.filter((call) => call.runId && call.runId === message.runId);
    for (const call of runCalls) {
      list.append(toolItem(call));
      looseCalls.splice(looseCalls.indexOf(call), 1);
    }
    list.append(messageItem(message, { partialBadge: partialBadges.has(message.id) }));
    for (const call of callsByMessage.get(message.id) ?? []) list.append(toolItem(call));
  }
  for (const call of looseCalls) list.append(toolItem(call));
  list.scrollTop = list.scrollHeight;
}

/**
 * A run being streamed: the user's turn and the assistant's output as journal records
 * arrive. Replaced by the stored transcript once the run ends.
 */
export class LiveTurn {
  /** `userText` is null when the user's turn is already on screen (a stored transcript). */
  constructor(list, userText) {
    this.list = list;
    this.items = [];
    this.lastText = null;
    this.lastReasoning = null;
    this.tools = new Map();
    if (userText !== null) {
      const user = messageItem({ id: 'live-user', role: 'user', content: userText });
      user.classList.add('live');
      this.add(user);
    }
  }

  add(item) {
    item.classList.add('live');
    this.list.append(item);
    this.items.push(item);
    this.list.scrollTop = this.list.scrollHeight;
    return item;
  }

  apply(record) {
    const data = record.data ?? {};
    switch (record.type) {
      case 'token': {
        if (this.lastText === null) {
          const item = this.add(element('li', 'message assistant streaming'));
          item.dataset.live = 'answer';
          this.lastText = element('div', 'bubble', '');
          item.append(this.lastText);
        }
        this.lastText.textContent += data.text ?? '';
        this.lastReasoning = null;
        break;
      }
      case 'reasoning': {
        if (this.lastReasoning === null) {
          const item = this.add(element('li', 'message assistant'));
          const block = reasoningBlock('');
          block.open = true;
          item.append(block);
          this.lastReasoning = block.querySelector('p');
        }
        this.lastReasoning.textContent += data.text ?? '';
        break;
      }
      case 'tool': {
        const call = { id: data.toolCallId, name: data.name, args: data.args, done: false };
        this.tools.set(call.id, { call, item: this.add(toolItem(call)) });
        this.closeText();
        break;
      }
      case 'tool_result': {
        const entry = this.tools.get(data.toolCallId);
        if (entry) {
          Object.assign(entry.call, { result: data.result, isError: data.isError, done: true });
          updateToolItem(entry.item, entry.call);
        }
        break;
      }
      case 'warning':
        this.add(element('li', 'marker cancelled', `Warning: ${data.message ?? ''}`));
        break;
      default:
        break;
    }
    this.list.scrollTop = this.list.scrollHeight;
  }

  closeText() {
    if (this.lastText) this.lastText.parentElement.classList.remove('streaming');
    this.lastText = null;
    this.lastReasoning = null;
  }

  get answerText() {
    return this.items
      .filter((item) => item.dataset.live === 'answer')
      .map((item) => item.textContent)
      .join('');
  }
}

export function sessionListItem(summary, { current, live, onSelect }) {
  const item = element('li');
  const button = element('button', 'session-item');
  button.type = 'button';
  button.dataset.sessionId = summary.id;
  if (current) button.setAttribute('aria-current', 'page');
  const title = element('span', 'session-item-title');
  if (live) title.append(element('span', 'live-dot'));
  // The index counts stored messages; a streaming turn's question is saved (E1) but held
  // in the pending turn until the run ends.
  const count = summary.messageCount + (summary.pending ? 1 : 0);
  title.append(document.createTextNode(summary.title || 'Untitled'));
  const when = new Date(summary.updatedAt).toLocaleString([], {
    dateStyle: 'short',
    timeStyle: 'short',
  });
  button.append(
    title,
    element(
      'span',
      'session-item-meta',
      `${count} ${count === 1 ? 'message' : 'messages'} · ${when}`,
    ),
  );
  button.addEventListener('click', () => onSelect(summary.id));
  item.append(button);
  return item;
}

export function memoryItem(record) {
  const item = element('li', 'memory-record');
  const when = new Date(record.extractedAt).toLocaleTimeString();
  const turns = `${record.turns} completed ${record.turns === 1 ? 'turn' : 'turns'}`;
  item.append(
    element(
      'div',
      'memory-record-meta',
      `Chat ${record.sessionId.slice(0, 8)} · ${turns} · ${when}`,
    ),
  );
  const list = element('ul');
  for (const text of record.items) list.append(element('li', '', text));
  if (record.items.length === 0) list.append(element('li', '', '(nothing memorable)'));
  item.append(list);
  return item;
}
