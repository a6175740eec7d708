/**
 * GraphQL mutations (`@Args('id')`, `#id`) in two app instances on one set of masters, on Apollo
 * (Express) and on Mercurius (Fastify): the same id never runs in both at once, and a busy lock
 * answers `errors[0].extensions` `{ code: 'LOCK_BUSY', reason: 'lock-busy' }`, with no stack and
 * no master in the response.
 */
import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { UseFilters, type INestApplication } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Args, GraphQLModule, Mutation, Query, Resolver } from '@nestjs/graphql';
import { MercuriusDriver, type MercuriusDriverConfig } from '@nestjs/mercurius';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { Locked, RedlockExceptionFilter, RedlockModule, RedlockService } from '../../lib/index.js';
import { useMasters, whilePaused } from '../support/index.js';
import {
  CriticalSection,
  CustomAnswerFilter,
  LOSABLE,
  LossProbe,
  ONE_TRY,
  SectionHandler,
  expectNoMasterPort,
  expectNothingLeaked,
  instanceProviders,
  transportOptions,
} from './fixtures/critical-section.js';
import { useTwoInstances, type AtClose } from './fixtures/two-instances.js';

const probe = new LossProbe();

const typeDefs = `
  type Query { ready: Boolean! }
  type Mutation {
    work(id: ID): String
    workOnce(id: ID): String
    workOnceCustom(id: ID): String
    workUntilLost(id: ID): String
  }
`;

@Resolver()
class ItemsResolver extends SectionHandler {
  @Query('ready')
  ready(): boolean {
    return true;
  }

  @Mutation('work')
  @Locked('gql-item:#id')
  work(@Args('id') id: string): Promise<string> {
    return this.enter(id);
  }

  @Mutation('workOnce')
  @Locked('gql-item:#id', ONE_TRY)
  workOnce(@Args('id') id: string): Promise<string> {
    return this.enter(id);
  }

  @Mutation('workUntilLost')
  @Locked('gql-item:#id', LOSABLE)
  workUntilLost(@Args('id') id: string): Promise<string> {
    return probe.runUntilLost(id);
  }

  @Mutation('workOnceCustom')
  @UseFilters(CustomAnswerFilter)
  @Locked('gql-item:#id', ONE_TRY)
  workOnceCustom(@Args('id') id: string): Promise<string> {
    return this.enter(id);
  }
}

interface GraphQLResponse {
  data?: Record<string, unknown> | null;
  errors?: { message: string; path?: unknown[]; extensions?: Record<string, unknown> }[];
}

const servers = {
  Apollo: {
    graphql: () => GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, typeDefs }),
    adapter: () => undefined,
  },
  Mercurius: {
    graphql: () => GraphQLModule.forRoot<MercuriusDriverConfig>({ driver: MercuriusDriver, typeDefs }),
    adapter: () => new FastifyAdapter(),
  },
};

const masters = useMasters(3);

describe.each(Object.entries(servers))('GraphQL on %s, two instances', (_server, { graphql, adapter }) => {
  const section = new CriticalSection();

  async function startInstance(
    name: string,
    atClose: AtClose,
  ): Promise<{ app: INestApplication; post: (query: string) => Promise<GraphQLResponse> }> {
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot(transportOptions(masters.urls)), graphql()],
      providers: [
        ItemsResolver,
        ...instanceProviders(section, name),
        { provide: APP_FILTER, useClass: RedlockExceptionFilter },
      ],
    }).compile();
    const httpAdapter = adapter();
    const app = httpAdapter
      ? moduleRef.createNestApplication(httpAdapter, { logger: false })
      : moduleRef.createNestApplication({ logger: false });
    atClose(() => app.close());
    await app.listen(0, '127.0.0.1');
    const url = (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
    const post = async (query: string): Promise<GraphQLResponse> => {
      const response = await fetch(`${url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query }),
      });
      return (await response.json()) as GraphQLResponse;
    };
    return { app, post };
  }

  const two = useTwoInstances(startInstance);

  it('runs mutations for the same id one at a time across both instances; every mutation answers', async () => {
    const calls = Array.from({ length: 10 }, (_, i) =>
      (i % 2 === 0 ? two.a : two.b).post('mutation { work(id: "same") }'),
    );
    const answers = await Promise.all(calls);
    expect(answers.map((r) => r.errors)).toEqual(Array(10).fill(undefined));
    expect(new Set(answers.map((r) => r.data?.work))).toEqual(new Set(['A', 'B']));
    expect(section.entered).toBe(10);
    expect(section.maxInside).toBe(1);
  });

  it('a busy lock answers extensions.code LOCK_BUSY with reason lock-busy, no stack, no master', async () => {
    const held = await two.a.app.get(RedlockService).acquire('gql-item:7', 10_000);
    try {
      const response = await two.b.post('mutation { workOnce(id: "7") }');
      expect(response.data).toEqual({ workOnce: null });
      expect(response.errors).toHaveLength(1);
      const [error] = response.errors!;
      expect(error.extensions).toEqual({ code: 'LOCK_BUSY', reason: 'lock-busy' });
      expect(error.path).toEqual(['workOnce']);
      expect(error.message).toContain('"gql-item:7"');
      expectNothingLeaked(response);
    } finally {
      await held.release();
    }
  });

  it('no quorum (two of three masters paused) answers LOCK_UNAVAILABLE, naming no master', async () => {
    const response = await whilePaused(masters.masters.slice(0, 2), () => two.b.post('mutation { workOnce(id: "9") }'));
    expect(response.data).toEqual({ workOnce: null });
    const [error] = response.errors!;
    expect(error.extensions).toEqual({ code: 'LOCK_UNAVAILABLE', reason: 'lock-unavailable' });
    expect(error.message).toContain('"gql-item:9"');
    expectNothingLeaked(response);
    expectNoMasterPort(response, masters);
  });

  it('a lock lost while the resolver ran answers LOCK_LOST, naming no master', async () => {
    const response = await probe.loseLockOf(masters, two.b.post('mutation { workUntilLost(id: "lost") }'));
    expect(response.data).toEqual({ workUntilLost: null });
    const [error] = response.errors!;
    expect(error.extensions).toEqual({ code: 'LOCK_LOST', reason: 'lock-lost' });
    expect(error.path).toEqual(['workUntilLost']);
    expect(error.message).toContain('"gql-item:lost"');
    expectNothingLeaked(response);
    expectNoMasterPort(response, masters);
  });

  it('an argument that makes no key answers BAD_LOCK_KEY', async () => {
    const response = await two.b.post('mutation { workOnce }');
    expect(response.errors?.[0]?.extensions).toEqual({ code: 'BAD_LOCK_KEY', reason: 'bad-lock-key' });
    expectNothingLeaked(response);
  });

  it("a subclass's answer() reaches the client", async () => {
    const held = await two.a.app.get(RedlockService).acquire('gql-item:8', 10_000);
    try {
      const response = await two.b.post('mutation { workOnceCustom(id: "8") }');
      expect(response.errors?.[0]).toMatchObject({
        message: 'custom answer in graphql',
        extensions: { code: 'COME_BACK_LATER', reason: 'come-back-later' },
      });
    } finally {
      await held.release();
    }
  });
});
