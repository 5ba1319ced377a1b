/**
 * The gate's two template databases on its servers (templates/build.ts builds them): both on
 * base's server, or, when head has a server of its own, base's there and both again on head's,
 * as one server would have them.
 */
import {
  BaseSchemaError,
  buildBaseTemplate,
  buildTemplates,
  runTemplateInputs,
  type TemplateInputs,
  type Templates,
} from '../templates/build.js';
import type { RunContext } from '../runtime/run-context.js';
import type { GateRecord } from './gate-record.js';
import type { GateConfig } from './options.js';
import type { Place, Places } from './places.js';

/**
 * Builds the templates every replay is copied from.
 * @param config the run's options
 * @param record where the migrations, their failure and how head was built are noted
 * @param places the servers
 * @param baseRoot where base's files (or its migrate command) live
 * @param context working directory, log and interrupt
 * @returns the templates; `head` is null when head's migrations failed
 * @throws BaseSchemaError when base's migrations fail: nothing can be measured
 */
export async function buildSchemas(
  config: GateConfig,
  record: GateRecord,
  places: Places,
  baseRoot: string,
  context: RunContext,
): Promise<Templates> {
  const inputs = (place: Place): TemplateInputs =>
    runTemplateInputs(
      { serverUrl: place.server.url, serverDescription: place.server.description, prefix: place.prefix, source: config.schema, baseRoot },
      config,
      context,
    );
  const { base, head } = places;
  let templates: Templates;
  try {
    if (places.separate) {
      // Base's server needs base's template only; head's builds both, as one server would.
      base.created.push(`${base.prefix}_base`);
      const baseTemplate = await buildBaseTemplate(inputs(base));
      head.created.push(`${head.prefix}_base`, `${head.prefix}_head`);
      context.logger.info("building base's and head's schemas again on head's server");
      const onHead = await buildHeadServerTemplates(inputs(head));
      templates = {
        ...onHead,
        base: baseTemplate.name,
        migrations: [...baseTemplate.migrations, ...onHead.migrations.filter((m) => m.side === 'head')],
      };
    } else {
      base.created.push(`${base.prefix}_base`, `${base.prefix}_head`);
      templates = await buildTemplates(inputs(base));
    }
  } catch (error) {
    if (error instanceof BaseSchemaError) record.migrationFailure = error.failure;
    throw error;
  }
  record.templates = templates;
  record.environment.head_from_scratch = templates.headFromScratch;
  record.environment.head_statistics = templates.headStatistics;
  return templates;
}

/**
 * Base's and head's templates on head's server. Base's migrations come first there too, and a
 * failure among them is the change under test failing (an upgrade that breaks an old migration):
 * a head failure, not a run that cannot start.
 */
async function buildHeadServerTemplates(inputs: TemplateInputs): Promise<Templates> {
  try {
    return await buildTemplates(inputs);
  } catch (error) {
    if (!(error instanceof BaseSchemaError)) throw error;
    inputs.logger.info(`head: ${error.message}`);
    const failure = { ...error.failure, side: 'head' as const, name: `${error.failure.name} (base's migration, on head's server)` };
    return { base: `${inputs.prefix}_base`, head: null, migrations: [], failure, headFromScratch: null, headStatistics: null };
  }
}
