import type { S3Client } from '@aws-sdk/client-s3';

/**
 * FAULT INJECTION through SDK middleware: requests whose key matches a rule fail as the
 * rule says, before or after the server saw them. Installed once on a test's own client
 * (the adapter is given that client), so the adapter's real code meets real SDK errors.
 */
export type FaultEffect =
  /** The connection is reset before the request is sent: nothing reached the server. */
  | 'reset-before'
  /** The request reached the server (and may have been applied), then the reply is lost. */
  | 'reset-after'
  /** The server answers this status instead (the request is not sent). */
  | { status: 500 | 503 | 409 | 429 | 403 | 400; name: string }
  /**
   * No reply within the request's deadline: after `deadlineMs` the call fails as the SDK
   * fails an aborted one (the server never saw it). The deadline itself is tested against a
   * server that never answers.
   */
  | { hangMs: number };

export interface FaultRule {
  /** Which requests: a command name ("PutObjectCommand") and a key test. */
  readonly command?: string;
  readonly key: (key: string) => boolean;
  readonly effect: FaultEffect;
  /** How many matching requests fail; then the rule is spent. */
  times: number;
}

export class FaultInjector {
  private readonly rules: FaultRule[] = [];
  /** Every request seen: command name and key, in order. */
  readonly seen: Array<{ command: string; key: string }> = [];

  constructor(client: S3Client) {
    client.middlewareStack.add(
      ((next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) =>
        async (args: { input?: { Key?: string; Prefix?: string } }) => {
          const command = context.commandName ?? '';
          const key = args.input?.Key ?? args.input?.Prefix ?? '';
          this.seen.push({ command, key });
          const rule = this.rules.find(
            (candidate) =>
              candidate.times > 0 &&
              (candidate.command === undefined || candidate.command === command) &&
              candidate.key(key),
          );
          if (rule === undefined) return next(args);
          rule.times--;
          return this.apply(rule.effect, () => next(args));
        }) as never,
      { step: 'finalizeRequest', name: 'keepsakeTestFaults', priority: 'low' } as never,
    );
  }

  add(rule: Omit<FaultRule, 'times'> & { times?: number }): FaultRule {
    const added: FaultRule = { ...rule, times: rule.times ?? 1 };
    this.rules.push(added);
    return added;
  }

  clear(): void {
    this.rules.length = 0;
  }

  /** Requests seen since `from` (an index into `seen`) for one command. */
  count(command: string, from = 0): number {
    return this.seen.slice(from).filter((entry) => entry.command === command).length;
  }

  private async apply(effect: FaultEffect, send: () => Promise<unknown>): Promise<unknown> {
    if (effect === 'reset-before') throw connectionReset();
    if (effect === 'reset-after') {
      await send();
      throw connectionReset();
    }
    if (typeof effect === 'object' && 'hangMs' in effect) {
      await new Promise((resolve) => setTimeout(resolve, effect.hangMs));
      throw Object.assign(new Error('Request aborted (injected: no reply within the deadline)'), {
        name: 'AbortError',
      });
    }
    throw Object.assign(new Error(`injected ${effect.status} ${effect.name}`), {
      name: effect.name,
      $fault: effect.status === 403 || effect.status === 400 ? 'client' : 'server',
      $metadata: { httpStatusCode: effect.status },
    });
  }
}

function connectionReset(): Error {
  return Object.assign(new Error('socket hang up (injected)'), { code: 'ECONNRESET' });
}
