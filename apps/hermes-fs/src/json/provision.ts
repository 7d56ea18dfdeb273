/** `hermes-fs provision … --json`: the generated file and the registry values it was generated from. */
import { z } from 'zod';
import { octalMode } from './common.js';

const install = z.strictObject({
  home: z.string().regex(/^\//),
  user: z.string().min(1),
  group: z.string().min(1),
  managed: z.boolean(),
  manager: z.string().nullable().describe("HERMES_MANAGED and the marker's content; null when unmanaged."),
  homeMode: octalMode.nullable().describe("HERMES_HOME_MODE, or null when unset."),
  service: z.string().min(1),
}).describe("The install the file is for.");

const flushBudget = z.strictObject({
  ms: z.number().int().min(1),
  source: z.enum(["option","config-default"]).describe("--flush-budget-ms, or the default of gateway.shutdown_flush_budget_ms (@hermes/config)."),
  syncMs: z.number().int().min(1),
  syncSource: z.enum(["option","flush-budget"]).describe("--sync-budget-ms, or the shutdown hook's rule for an unset syncBudgetMs: the flush budget."),
}).describe("The gateway's stop budgets (docs/stop-contract.md): TimeoutStopSec = ms + syncMs + stopMarginMs, rounded up to seconds.");

const tmpfilesLine = z.strictObject({
  type: z.enum(["d","z","f"]),
  path: z.string().regex(/^\//),
  mode: z.string().regex(/^:?[0-7]{4}$/).describe("\":0700\": applied on creation only; \"0700\": applied to an existing entry (z)."),
  user: z.string(),
  group: z.string(),
  age: z.literal("-"),
  argument: z.string().nullable(),
  kind: z.string().nullable().describe("The artifact kind of the directory; null for the .managed marker."),
  line: z.string(),
});

export const provisionTmpfiles = z.strictObject({
  schemaVersion: z.literal(1),
  command: z.literal("provision tmpfiles"),
  install: install,
  lines: z.array(tmpfilesLine).min(1),
  text: z.string(),
});

export const provisionSystemd = z.strictObject({
  schemaVersion: z.literal(1),
  command: z.literal("provision systemd"),
  install: install,
  unit: z.strictObject({
    type: z.enum(["unit","drop-in"]).describe("A full unit (--exec-start given) or a drop-in for an existing unit."),
    installPath: z.string().regex(/^\/etc\/systemd\/system\//),
  }),
  flushBudget: flushBudget,
  stopMarginMs: z.number().int().min(0),
  settings: z.array(z.strictObject({
    section: z.enum(["Unit","Service","Install"]),
    key: z.string().min(1),
    value: z.string(),
  })),
  text: z.string(),
});

export const provisionNixos = z.strictObject({
  schemaVersion: z.literal(1),
  command: z.literal("provision nixos"),
  install: install,
  flushBudget: flushBudget,
  stopMarginMs: z.number().int().min(0),
  fragment: z.strictObject({
    tmpfilesRules: z.array(z.string()),
    service: z.string(),
    environment: z.record(z.string(), z.string()),
    serviceConfig: z.record(z.string(), z.union([z.string(), z.array(z.string())])),
  }),
  text: z.string(),
});

const registryKind = z.strictObject({
  name: z.string(),
  description: z.string(),
  dir: z.string().nullable().describe("Relative to the home; \"\" is the home itself; null when the caller chooses it."),
  dirMode: octalMode,
  honoursHomeMode: z.boolean(),
  requiredWhenManaged: z.boolean(),
  reconciledWhenUnmanaged: z.boolean().describe("The runtime brings an existing directory of the kind back to its mode (unmanaged installs)."),
  standardSubdir: z.boolean(),
  ownership: z.boolean(),
  files: z.array(z.string()).nullable(),
  file: z.strictObject({
    mode: octalMode,
    managedMode: z.union([octalMode, z.literal("umask")]),
    managedMaxMode: octalMode,
    retighten: z.boolean(),
    ceiling: octalMode,
    managedCeiling: octalMode,
    secret: z.boolean(),
  }),
});

export const provisionRegistry = z.strictObject({
  schemaVersion: z.literal(1),
  command: z.literal("provision registry"),
  registry: z.strictObject({
    schemaVersion: z.literal(1),
    defaultDirMode: octalMode,
    kinds: z.array(registryKind).min(1),
    standardSubdirs: z.array(z.string()),
    managed: z.strictObject({
      dirMode: octalMode,
      umask: octalMode,
      marker: z.strictObject({
        name: z.string(),
        mode: octalMode,
      }),
    }),
  }),
  text: z.string(),
});

/** One of the four generators' documents (a failure prints the error document of error.schema.json). */
export const provisionDocument = z.union([provisionTmpfiles, provisionSystemd, provisionNixos, provisionRegistry]);
