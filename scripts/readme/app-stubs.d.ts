// The application classes README examples mention without defining; see scripts/check-readme.mjs.
export {};
declare global {
  // Free variables that statement-level snippets use: an injected service and a request value.
  const redlock: import('../../lib/index.js').RedlockService;
  const tenant: string;
  /** `this` of statement-level snippets: the members of the service they are written in. */
  interface ReadmeThis {
    redlock: import('../../lib/index.js').RedlockService;
    consumer: { start(signal: AbortSignal): void; stop(): void };
    exportRows(tenant: string, signal: AbortSignal): Promise<number>;
  }
  class AppModule {}
  class ImportService {
    import(tenant: string): Promise<void>;
  }
  class ReportJob {
    run(): Promise<string | undefined>;
  }
  class PaymentsService {
    charge(id: string | number): Promise<unknown>;
  }
  class CheckoutDto {
    cartId: string;
  }
  class User {
    id: string;
  }
  class Ledger {
    move(from: string, to: string, amount: number, options: { signal: AbortSignal }): Promise<void>;
  }
  class SeatsRepository {
    sell(id: string, signal: AbortSignal): Promise<unknown>;
    move(from: number, to: number): Promise<void>;
  }
  class SourceStore {
    batches(tenant: string): Promise<unknown[]>;
  }
  /** docs/fencing.md: a store that refuses a write whose token is below the last one it saw. */
  class InvoiceStore {
    write(id: string, data: string, fencingToken: number): Promise<void>;
  }
  function write(fencingToken: number): Promise<void>;
  class TargetStore {
    write(batch: unknown, options: { signal: AbortSignal }): Promise<void>;
  }
}
