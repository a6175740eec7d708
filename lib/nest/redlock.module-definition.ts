import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { RedlockOptions } from '../options/redlock-options.js';

/**
 * Options of `RedlockModule.forRoot()`: the `Redlock` options (`RedlockOptions`; each one's type,
 * default and meaning are declared once in `REDLOCK_OPTIONS`, lib/options/redlock-options.ts, and listed in the
 * README's option table). `isGlobal` (default true) is given beside them.
 *
 * @example
 * RedlockModule.forRoot({ nodes: ['redis://a:6379', 'redis://b:6379', 'redis://c:6379'], isGlobal: true });
 * @publicApi
 */
export type RedlockModuleOptions = RedlockOptions;

/**
 * Implement it for `forRootAsync({ useClass })` or `useExisting`.
 *
 * @example
 * \@Injectable()
 * class RedlockConfig implements RedlockOptionsFactory {
 *   constructor(private readonly config: ConfigService) {}
 *   createRedlockOptions() { return { nodes: this.config.getOrThrow<string>('REDLOCK_NODES').split(',') }; }
 * }
 * @publicApi
 */
export interface RedlockOptionsFactory {
  createRedlockOptions(): RedlockModuleOptions | Promise<RedlockModuleOptions>;
}

export const { ConfigurableModuleClass: ConfigurableRedlockModule, MODULE_OPTIONS_TOKEN: REDLOCK_MODULE_OPTIONS } =
  new ConfigurableModuleBuilder<RedlockModuleOptions>({ moduleName: 'Redlock' })
    .setClassMethodName('forRoot')
    .setFactoryMethodName('createRedlockOptions')
    .setExtras({ isGlobal: true }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
    .build();
