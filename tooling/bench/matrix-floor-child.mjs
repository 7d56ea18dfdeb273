// B6's baseline child: what a matrix scenario child costs before it measures anything — a Node process that
// loads the five writer packages the real child loads, then exits.
await Promise.all([
  import('../../packages/fs-policy/dist/index.js'),
  import('../../packages/cli/dist/index.js'),
  import('../../packages/gateway/dist/index.js'),
  import('../../packages/moa-trace/dist/index.js'),
  import('../../packages/session-db/dist/index.js'),
  import('../../packages/trajectory/dist/index.js'),
]);
process.stdout.write('{}\n');
