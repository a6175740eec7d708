import { Injectable } from '@nestjs/common';
import { currentLock, Locked } from 'nestjs-quorum-lock';

@Injectable()
export class ReportsService {
  @Locked('report:#day', 5_000)
  async build(day: string): Promise<{ day: string; locked: boolean }> {
    const { signal } = currentLock()!;
    signal.throwIfAborted();
    return { day, locked: !signal.aborted };
  }
}
