/**
 * `docker`: a throwaway server in a `postgres:<major>` container, where a Docker engine exists
 * (a self-hosted runner, a laptop). The container publishes its port on 127.0.0.1 only, has a
 * random password, and is started with `--rm`, so that removing it removes its data.
 */
import crypto from 'node:crypto';
import { execFile } from 'node:child_process';
import { InfraError } from '../exit-codes.js';
import { serverVersion } from './database-url.js';
import { checkDockerExtensions, checkServerExtensions } from './extensions.js';
import type { Provisioner, Server, StartOptions } from './types.js';
import { redact } from './url.js';

/** Newest major with an official image tag we default to. */
export const DEFAULT_DOCKER_MAJOR = 18;

/**
 * Runs the docker CLI.
 * @param args its arguments
 * @param timeoutMs how long it may take
 * @param env variables for the command (`--env NAME` without a value passes them on, so a
 *   secret is in neither the process list nor an error's echo of the command line)
 * @returns stdout, trimmed
 */
function docker(args: string[], timeoutMs: number, env: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('docker', args, { timeout: timeoutMs, encoding: 'utf8', env: { ...process.env, ...env } }, (error, stdout, stderr) => {
      if (error) {
        const detail = (stderr || error.message).trim().split('\n').pop() ?? error.message;
        reject(new Error(detail));
      } else resolve(stdout.trim());
    });
  });
}

/**
 * Whether a Docker engine answers (not just whether the CLI is installed).
 * @returns undefined when it does, else why not
 */
export async function dockerUnavailable(): Promise<string | undefined> {
  try {
    await docker(['info', '--format', '{{.ServerVersion}}'], 10_000);
    return undefined;
  } catch (error) {
    const message = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'the docker command is not installed' : (error as Error).message;
    return `no Docker engine (${message})`;
  }
}

export class DockerProvisioner implements Provisioner {
  readonly kind = 'docker';

  /**
   * Starts `postgres:<major>` and waits until it accepts connections.
   * @param options major, settings, timeout, logger
   * @returns the running server; stop() removes the container
   */
  async start(options: StartOptions): Promise<Server> {
    const major = options.major ?? DEFAULT_DOCKER_MAJOR;
    const extensions = options.extensions ?? [];
    // The official image has contrib only: say so before pulling anything.
    checkDockerExtensions(options.image, major, extensions);
    const why = await dockerUnavailable();
    if (why) throw new InfraError(`cannot start a docker server: ${why}; start Docker, or use --provision embedded or local`);
    const password = crypto.randomBytes(18).toString('base64url');
    const image = options.image ?? `postgres:${major}`;
    options.logger?.info(`starting ${image} in Docker (pulling the image if needed)`);
    let id: string;
    try {
      id = await docker(dockerRunArgs(image, options.settings ?? {}), 10 * 60_000, { POSTGRES_PASSWORD: password });
    } catch (error) {
      throw new InfraError(
        `docker run ${image} failed: ${redact((error as Error).message, password)}; check the image name and that Docker can pull it`,
      );
    }
    const stop = async () => {
      await docker(['rm', '--force', '--volumes', id], 60_000).catch((error: Error) =>
        options.logger?.info(`warning: could not remove container ${id.slice(0, 12)}: ${error.message}`),
      );
    };
    try {
      const published = await docker(['port', id, '5432/tcp'], 30_000);
      const port = /:(\d+)\s*$/m.exec(published)?.[1];
      if (!port) throw new InfraError(`docker did not publish the container's port (got '${published}')`);
      const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
      const version = await waitForServer(url, options.startTimeoutMs ?? 120_000);
      const description = `PostgreSQL ${version} (docker ${image}) on 127.0.0.1:${port}`;
      await checkServerExtensions(url, extensions, description);
      return { kind: 'docker', url, version, description, stop };
    } catch (error) {
      await stop();
      throw error instanceof InfraError ? error : new InfraError(`the ${image} container did not start: ${(error as Error).message}`);
    }
  }
}

/**
 * The `docker run` arguments of a throwaway server: detached, removed when stopped, its port on
 * 127.0.0.1 only, the password passed by name from the environment (never on the command line),
 * the settings as the server's own `-c` options after the image.
 * @param image the image (`postgres:<major>`, or one with extensions such as `postgis/postgis:16-3.5`)
 * @param settings server settings, shared_preload_libraries included
 * @returns the arguments after `docker`
 */
export function dockerRunArgs(image: string, settings: Record<string, string>): string[] {
  return [
    'run',
    '--detach',
    '--rm',
    '--publish',
    '127.0.0.1::5432',
    '--env',
    'POSTGRES_PASSWORD',
    '--label',
    'pg-retest-action=1',
    image,
    ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
  ];
}

/** The image's entrypoint restarts the server once after initialising it: retry until it stays up. */
async function waitForServer(url: string, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    try {
      return await serverVersion(url);
    } catch (error) {
      last = (error as Error).message;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new InfraError(`the server in Docker did not accept connections within ${Math.round(timeoutMs / 1000)} s (last: ${last})`);
}
