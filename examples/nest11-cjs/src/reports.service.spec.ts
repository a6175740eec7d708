import { Test } from '@nestjs/testing';
import { LockLostError } from 'nestjs-quorum-lock';
import { overrideRedlock, RedlockTestingService } from 'nestjs-quorum-lock/testing';
import { AppModule } from './app.module';
import { ReportsService } from './reports.service';

describe('ReportsService (nestjs-quorum-lock/testing, no Redis)', () => {
  it('runs under a stub lock, with the whole AppModule', async () => {
    const redlock = new RedlockTestingService();
    const moduleRef = await overrideRedlock(Test.createTestingModule({ imports: [AppModule] }), redlock).compile();
    await expect(moduleRef.get(ReportsService).build('2026-11-23')).resolves.toEqual({ day: '2026-11-23', locked: true });
    expect(redlock.acquisitions).toEqual([{ resources: ['report:2026-11-23'], ttl: 5_000 }]);
    redlock.simulateBusy('report:busy');
    await expect(moduleRef.get(ReportsService).build('busy')).rejects.toMatchObject({ busy: true });
    expect(new LockLostError(['x'], 'lapsed')).toBeInstanceOf(Error);
    await moduleRef.close();
  });
});
