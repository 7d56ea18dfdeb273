/**
 * ESLint plugin `hermes`: one rule, `no-permission-fs`, that reports every fs call able to set or change
 * a file's permission bits or owner. Consumer packages name an artifact kind and let @hermes/fs-policy
 * choose the mode; this rule keeps that policy from being duplicated at call sites.
 */

const ALWAYS = new Set([
  'chmod', 'chmodSync', 'fchmod', 'fchmodSync', 'lchmod', 'lchmodSync',
  'chown', 'chownSync', 'fchown', 'fchownSync', 'lchown', 'lchownSync',
]);
const MKDIR = new Set(['mkdir', 'mkdirSync']);
const OPEN = new Set(['open', 'openSync']);
const WRITE_WITH_OPTIONS = new Set([
  'writeFile', 'writeFileSync', 'appendFile', 'appendFileSync', 'createWriteStream', 'copyFile', 'cp', 'cpSync',
]);
const FS_MODULES = new Set(['fs', 'node:fs', 'fs/promises', 'node:fs/promises']);
const PROCESS_MODULES = new Set(['process', 'node:process']);

/** @param {import('estree').Node} node */
function calleeName(node) {
  if (node.type === 'Identifier') return node.name;
  if (node.type === 'MemberExpression') {
    if (!node.computed && node.property.type === 'Identifier') return node.property.name;
    if (node.computed && node.property.type === 'Literal' && typeof node.property.value === 'string') {
      return node.property.value;
    }
  }
  if (node.type === 'ChainExpression') return calleeName(node.expression);
  return undefined;
}

/** True when an object literal carries a `mode` property (or spreads something that might). */
function hasModeProperty(node) {
  if (node?.type !== 'ObjectExpression') return false;
  return node.properties.some(
    (p) =>
      p.type === 'Property' &&
      ((p.key.type === 'Identifier' && p.key.name === 'mode') || (p.key.type === 'Literal' && p.key.value === 'mode')),
  );
}

function isNumeric(node) {
  return (node?.type === 'Literal' && typeof node.value === 'number') || node?.type === 'BinaryExpression';
}

const HINT = 'permission policy lives in @hermes/fs-policy: name an artifact kind instead';

/** @type {import('eslint').Rule.RuleModule} */
const noPermissionFs = {
  meta: {
    type: 'problem',
    docs: { description: 'Disallow fs calls that set permission bits, owners or the umask outside @hermes/fs-policy' },
    schema: [],
    messages: {
      banned: '`{{name}}` changes permissions or ownership; ' + HINT + '.',
      mkdirMode: '`{{name}}` with a mode chooses a directory permission; ' + HINT + ' (secureMkdir).',
      openMode: '`{{name}}` with a create mode chooses a file permission; ' + HINT + ' (atomicWrite / privateAppend).',
      writeMode: '`{{name}}` with a `mode` option chooses a file permission; ' + HINT + '.',
      umask: '`process.umask` reads or mutates the process-wide umask; use readUmask() from @hermes/fs-policy.',
      importBanned: 'importing `{{name}}` from "{{source}}": ' + HINT + '.',
    },
  },
  create(context) {
    return {
      CallExpression(node) {
        const name = calleeName(node.callee);
        if (name === undefined) return;
        if (ALWAYS.has(name)) {
          context.report({ node, messageId: 'banned', data: { name } });
        } else if (MKDIR.has(name)) {
          const opt = node.arguments[1];
          if (isNumeric(opt) || hasModeProperty(opt)) context.report({ node, messageId: 'mkdirMode', data: { name } });
        } else if (OPEN.has(name)) {
          if (node.arguments.length >= 3) context.report({ node, messageId: 'openMode', data: { name } });
        } else if (WRITE_WITH_OPTIONS.has(name)) {
          if (node.arguments.some((a) => hasModeProperty(a))) {
            context.report({ node, messageId: 'writeMode', data: { name } });
          }
        }
      },
      MemberExpression(node) {
        if (
          node.object.type === 'Identifier' &&
          node.object.name === 'process' &&
          calleeName(node) === 'umask'
        ) {
          context.report({ node, messageId: 'umask' });
        }
      },
      ImportDeclaration(node) {
        const source = String(node.source.value);
        for (const spec of node.specifiers) {
          if (spec.type !== 'ImportSpecifier') continue;
          const imported = spec.imported.type === 'Identifier' ? spec.imported.name : String(spec.imported.value);
          if ((FS_MODULES.has(source) && ALWAYS.has(imported)) || (PROCESS_MODULES.has(source) && imported === 'umask')) {
            context.report({ node: spec, messageId: 'importBanned', data: { name: imported, source } });
          }
        }
      },
    };
  },
};

const plugin = {
  meta: { name: '@hermes/eslint-plugin', version: '0.0.0' },
  rules: { 'no-permission-fs': noPermissionFs },
};

export default plugin;
