import type { S3Client } from '@aws-sdk/client-s3';

/**
 * Counts the requests a client sends, by command, through SDK middleware: what the request
 * cost tables report (requests are what S3 bills, and each is a round trip).
 */
export class RequestCounter {
  private readonly counts = new Map<string, number>();

  constructor(client: S3Client) {
    client.middlewareStack.add(
      ((next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) =>
        (args: unknown) => {
          const name = (context.commandName ?? 'unknown').replace(/Command$/, '');
          this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
          return next(args);
        }) as never,
      { step: 'initialize', name: 'keepsakeBenchRequestCounter' } as never,
    );
  }

  /** Requests sent while `action` ran, by command, and in all. */
  async during(action: () => Promise<unknown>): Promise<{ total: number; byCommand: string }> {
    const before = new Map(this.counts);
    await action();
    const delta: Array<[string, number]> = [];
    for (const [name, count] of this.counts) {
      const added = count - (before.get(name) ?? 0);
      if (added > 0) delta.push([name, added]);
    }
    delta.sort(([left], [right]) => left.localeCompare(right));
    return {
      total: delta.reduce((sum, [, count]) => sum + count, 0),
      byCommand: delta.map(([name, count]) => `${count} ${name}`).join(', '),
    };
  }
}
