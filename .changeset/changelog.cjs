// The changelog lines `changeset version` writes (named in config.json). A package's first release says
// "Initial release" once, instead of listing every change made before anyone could install it; later releases
// get the usual lines of @changesets/cli/changelog.
//
// changesets calls getReleaseLine once per changeset of a package, then getDependencyReleaseLine once, package by
// package, without naming the package. "First release" is therefore decided per changeset: every package it
// names still has version 0.0.0 in its package.json (never versioned: the packages are one fixed group, so they
// are all first released together). The "Initial release" line goes to the first minor or major changeset of the
// package (changesets heads it "Minor Changes"); if it has none, getDependencyReleaseLine writes it.
/* global require, module, __dirname */
/* eslint-disable @typescript-eslint/no-require-imports -- changesets loads this module with require(): it is CommonJS */
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const defaults = require('@changesets/cli/changelog').default;

const ROOT = path.resolve(__dirname, '..');
const WORKSPACE_DIRS = ['packages', 'apps'];
const INITIAL = '\n\n- Initial release';

let versions;
/** package name -> version in its package.json, for the published workspace packages. */
function workspaceVersions() {
  if (versions !== undefined) return versions;
  versions = new Map();
  for (const top of WORKSPACE_DIRS) {
    const base = path.join(ROOT, top);
    if (!fs.existsSync(base)) continue;
    for (const dir of fs.readdirSync(base)) {
      const file = path.join(base, dir, 'package.json');
      if (!fs.existsSync(file)) continue;
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
      versions.set(pkg.name, pkg.version);
    }
  }
  return versions;
}

/** True when every package the changeset releases is still at 0.0.0 (has never had a version). */
function isFirstRelease(changeset) {
  const known = workspaceVersions();
  const named = changeset.releases.filter((r) => r.type !== 'none').map((r) => r.name);
  return named.length > 0 && named.every((name) => known.get(name) === '0.0.0');
}

// Whether the current package already has its "Initial release" line; reset when its entry is complete.
let initialWritten = false;
let inFirstRelease = false;

/** One changeset's line: "Initial release" once per package in a first release, else the default line. */
async function getReleaseLine(changeset, type, options) {
  if (!isFirstRelease(changeset)) return defaults.getReleaseLine(changeset, type, options);
  inFirstRelease = true;
  if (initialWritten || type === 'patch') return '';
  initialWritten = true;
  return INITIAL;
}

/** The "updated dependencies" line: none in a first release (there was nothing to update from). */
async function getDependencyReleaseLine(changesets, dependenciesUpdated, options) {
  const first =
    inFirstRelease ||
    (changesets.length > 0 && changesets.every(isFirstRelease)) ||
    (dependenciesUpdated.length > 0 && dependenciesUpdated.every((dep) => dep.oldVersion === '0.0.0'));
  const written = initialWritten;
  initialWritten = false;
  inFirstRelease = false;
  if (!first) return defaults.getDependencyReleaseLine(changesets, dependenciesUpdated, options);
  return written ? '' : INITIAL;
}

module.exports = { default: { getReleaseLine, getDependencyReleaseLine } };
