import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

/** A test process that dies must not leave daemons behind: each is SIGKILLed by its pid. */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of live) if (child.exitCode === null) child.kill('SIGKILL');
  });
}

/**
 * One daemon of the test cluster, run in the foreground (`-f`) as a child of this process,
 * so it is stopped by its own pid and never outlives the test run.
 */
export class Daemon {
  private child: ChildProcess | null = null;
  private output = '';

  readonly label: string;
  private readonly binary: string;
  private readonly args: readonly string[];

  constructor(label: string, binary: string, args: readonly string[]) {
    this.label = label;
    this.binary = binary;
    this.args = args;
  }

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  get running(): boolean {
    const child = this.child;
    return child !== null && child.exitCode === null && child.signalCode === null;
  }

  /** What the daemon printed (its log goes to a file; this is what it says before that). */
  log(): string {
    return this.output;
  }

  /** Starts the daemon; rejects if it cannot be spawned. */
  async start(): Promise<void> {
    if (this.running) return;
    installExitHook();
    const child = spawn(this.binary, this.args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.output = '';
    live.add(child);
    child.once('exit', () => live.delete(child));
    const keep = (chunk: Buffer) => {
      if (this.output.length < 200_000) this.output += chunk.toString('utf8');
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', () => resolve());
      child.once('error', reject);
    });
  }

  /** Rejects once the daemon exits (for racing against a readiness check). */
  exited(): Promise<never> {
    const child = this.child;
    return new Promise<never>((_resolve, reject) => {
      if (child === null) return;
      const fail = () =>
        reject(new Error(`${this.label} exited before it was ready:\n${this.output.slice(-4000)}`));
      if (child.exitCode !== null || child.signalCode !== null) fail();
      else child.once('exit', fail);
    });
  }

  /** SIGKILL by pid, waiting for the exit: the daemon dies at once, as in a crash. */
  async kill(): Promise<void> {
    const child = this.child;
    if (child === null || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  }
}

/** Runs a Ceph tool to completion; its output on failure names the command. */
export async function runTool(
  binary: string,
  args: readonly string[],
  timeoutMs = 60_000,
): Promise<string> {
  try {
    const { stdout } = await execFileAsync(binary, args, {
      timeout: timeoutMs,
      killSignal: 'SIGKILL',
      maxBuffer: 16 * 1024 * 1024,
    });
    return stdout;
  } catch (error) {
    const details = error as { stderr?: string; stdout?: string; message?: string };
    throw new Error(
      `${binary} ${args.join(' ')} failed: ${details.message ?? String(error)}\n${details.stderr ?? ''}${details.stdout ?? ''}`,
    );
  }
}
