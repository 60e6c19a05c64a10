import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import type { BackendSettings } from './backends.js';
import type { OwnerReply, OwnerRequest } from './owner-worker.js';

const WORKER = new URL('./owner-worker.js', import.meta.url);

/** One owner process (owner-worker.ts), started and stopped by its pid through its handle. */
export class OwnerProcess {
  private constructor(private readonly child: ChildProcess) {}

  static async start(settings: BackendSettings): Promise<OwnerProcess> {
    const child = fork(WORKER, [JSON.stringify(settings)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, AWS_EC2_METADATA_DISABLED: 'true' },
    });
    const owner = new OwnerProcess(child);
    try {
      await owner.next('ready');
    } catch (error) {
      owner.child.kill('SIGKILL');
      throw error;
    }
    return owner;
  }

  async begin(withRecord: boolean): Promise<{ sessionId: string; runId: string }> {
    const begun = this.next('begun');
    this.send({ type: 'begin', withRecord });
    const { sessionId, runId } = (await begun) as Extract<OwnerReply, { type: 'begun' }>;
    return { sessionId, runId };
  }

  /** Asks the owner to complete its run; resolves once the request is sent. */
  complete(): Promise<OwnerReply> {
    const completed = this.next('completed');
    this.send({ type: 'complete' });
    return completed;
  }

  /** SIGKILL: the process dies at once, its connections, leases and locks with it. */
  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = once(this.child, 'exit');
    this.child.kill('SIGKILL');
    await exited;
  }

  private send(request: OwnerRequest): void {
    this.child.send(request);
  }

  private next(type: OwnerReply['type']): Promise<OwnerReply> {
    return new Promise<OwnerReply>((resolve, reject) => {
      const onExit = (code: number | null, signal: string | null) => {
        cleanup();
        reject(new Error(`the owner process exited (${signal ?? code}) before "${type}"`));
      };
      const onMessage = (reply: OwnerReply) => {
        if (reply.type === 'failed') {
          cleanup();
          reject(new Error(`owner process: ${reply.error}`));
        } else if (reply.type === type) {
          cleanup();
          resolve(reply);
        }
      };
      const cleanup = () => {
        this.child.off('exit', onExit);
        this.child.off('message', onMessage);
      };
      this.child.on('exit', onExit);
      this.child.on('message', onMessage);
    });
  }
}
