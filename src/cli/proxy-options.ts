/** `proxy`'s options: declared once here, validated by one schema into one {@link ProxyConfig}. */
import { z } from 'zod';
import type { CommandSpec } from '../options/argv.js';
import { postgresUrl } from '../options/postgres-url.js';
import { durationValue, filePath, flag, schemasOf } from '../options/values.js';

/** `HOST:PORT` (`[::1]:6543` for IPv6), port 1–65535, or 0 for any free port. */
const listenAddress = z
  .string({
    error: (issue) => (issue.input === undefined ? 'is required: HOST:PORT to listen on, e.g. 127.0.0.1:6543' : 'expected HOST:PORT'),
  })
  .transform((raw, ctx) => {
    const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s[\]]+):(\d{1,5})$/.exec(raw.trim());
    if (!m || Number(m[2]) > 65_535) {
      ctx.addIssue({ code: 'custom', message: `expected HOST:PORT, e.g. 127.0.0.1:6543 or 0.0.0.0:6543, got '${raw}'` });
      return z.NEVER;
    }
    return raw.trim();
  });

const options = {
  listen: {
    shape: 'value',
    placeholder: 'HOST:PORT',
    help: 'where clients connect instead of the server (e.g. 127.0.0.1:6543) (required)',
    schema: listenAddress,
  },
  target: {
    shape: 'value',
    placeholder: 'URL',
    help: 'the server to relay to (postgres://host:port/db?sslmode=…); its host, port and TLS options are used, clients bring their own user and password (required)',
    schema: z
      .string({
        error: (issue) => (issue.input === undefined ? 'is required: the server to relay to, postgres://host:5432/db' : 'expected a URL'),
      })
      .pipe(postgresUrl),
  },
  output: {
    shape: 'value',
    placeholder: 'FILE',
    help: 'the workload (.wkl) to write when the proxy stops; the sidecar FILE.capture.json goes next to it (required)',
    schema: filePath('the .wkl file to write'),
  },
  duration: {
    shape: 'value',
    placeholder: 'DURATION',
    help: 'stop by itself after this long (e.g. 10m); otherwise Ctrl-C or SIGTERM stops it',
    schema: durationValue('a duration such as 90s, 10m or 1h').optional(),
  },
  grace: {
    shape: 'value',
    placeholder: 'DURATION',
    help: 'after a stop, how long open sessions may go on before they are cut (default 10s)',
    schema: durationValue('a duration such as 10s').optional(),
  },
  'tls-cert': {
    shape: 'value',
    placeholder: 'FILE',
    help: 'a PEM certificate chain for clients that ask for TLS (sslmode=require); with --tls-key. Without it, the proxy tells clients it has no TLS',
    schema: z.string().min(1).optional(),
  },
  'tls-key': { shape: 'value', placeholder: 'FILE', help: 'the PEM private key of --tls-cert', schema: z.string().min(1).optional() },
  'include-noise': { shape: 'flag', help: 'keep driver SETs, SHOW and catalog-only introspection (left out by default)', schema: flag },
  json: { shape: 'flag', help: 'print the capture summary as JSON instead of text', schema: flag },
} as const;

const schema = z
  .object(schemasOf(options))
  .superRefine((raw, ctx) => {
    if ((raw['tls-cert'] === undefined) !== (raw['tls-key'] === undefined)) {
      const missing = raw['tls-cert'] === undefined ? 'tls-cert' : 'tls-key';
      ctx.addIssue({ code: 'custom', path: [missing], message: 'is required with the other: give --tls-cert and --tls-key together' });
    }
  })
  .transform((raw) => ({
    listen: raw.listen,
    target: raw.target,
    output: raw.output,
    durationMs: raw.duration,
    graceMs: raw.grace,
    tlsCert: raw['tls-cert'],
    tlsKey: raw['tls-key'],
    includeNoise: raw['include-noise'],
    json: raw.json,
  }));

export type ProxyConfig = z.output<typeof schema>;

export const proxyCommand: CommandSpec<ProxyConfig> = {
  name: 'proxy',
  summary:
    'Record a workload through a wire-protocol proxy: clients connect to --listen as to their server, every byte is relayed to --target ' +
    'unchanged, and what each session ran (prepared statements, binary parameters, pipelines, the ids RETURNING gave back) is written ' +
    'to a .wkl workload and its FILE.capture.json sidecar when the proxy stops.',
  options,
  schema,
};
