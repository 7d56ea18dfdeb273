/**
 * The build-time link between the code's output types and the schemas: each line fails `tsc` when a type the
 * code prints has a member its schema does not describe, or a value the schema does not accept. Add the field
 * to the schema in src/json/, then run `pnpm -C apps/hermes-fs schemas`.
 */
import type { z } from 'zod';
import type { DoctorReport } from '../doctor/types.js';
import type { ErrorDocument } from '../lib/output.js';
import type { MatrixReport } from '../matrix/run.js';
import type { entryJson, SpoolTotals } from '../pending/common.js';
import type { ProvisionNixosDocument, ProvisionRegistryDocument, ProvisionSystemdDocument, ProvisionTmpfilesDocument } from '../provision/run.js';
import type { PruneReport, RecoveryReport, SpoolEntryWithContent } from '@hermes/gateway';
import type { AssertConforms, Conforms, ErrorDocumentJson } from './common.js';
import type { DoctorJson } from './doctor.js';
import type { MatrixJson } from './matrix.js';
import type { PendingEntryJson, PendingListTotalsJson, PendingPruneJson, PendingRecoverJson } from './pending.js';
import type { provisionNixos, provisionRegistry, provisionSystemd, provisionTmpfiles } from './provision.js';

type Report = NonNullable<PendingRecoverJson['report']>;

/** Every output type against its schema; one failing line names the member or the value the schema lacks. */
export type OutputConformance = [
  AssertConforms<Conforms<DoctorReport, DoctorJson>>,
  AssertConforms<Conforms<MatrixReport, MatrixJson>>,
  AssertConforms<Conforms<ErrorDocument, ErrorDocumentJson>>,
  AssertConforms<Conforms<ReturnType<typeof entryJson<SpoolEntryWithContent>>, PendingEntryJson>>,
  AssertConforms<Conforms<ReturnType<SpoolTotals['toJSON']>, PendingListTotalsJson>>,
  AssertConforms<Conforms<RecoveryReport, Report>>,
  AssertConforms<Conforms<PruneReport['matched'], PendingPruneJson['matched']>>,
  AssertConforms<Conforms<PruneReport['salvaged'], PendingPruneJson['salvaged']>>,
  AssertConforms<Conforms<NonNullable<PruneReport['salvage']>['partial'], PendingPruneJson['movedAside']>>,
  AssertConforms<Conforms<PruneReport['kept'], PendingPruneJson['kept']>>,
  AssertConforms<Conforms<PruneReport['errors'], PendingPruneJson['errors']>>,
  AssertConforms<Conforms<ProvisionTmpfilesDocument, z.infer<typeof provisionTmpfiles>>>,
  AssertConforms<Conforms<ProvisionSystemdDocument, z.infer<typeof provisionSystemd>>>,
  AssertConforms<Conforms<ProvisionNixosDocument, z.infer<typeof provisionNixos>>>,
  AssertConforms<Conforms<ProvisionRegistryDocument, z.infer<typeof provisionRegistry>>>,
];
