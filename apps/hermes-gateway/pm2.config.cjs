// PM2 ecosystem file for hermes-gateway: `pm2 start pm2.config.cjs` (the home from $HERMES_HOME, the port from
// $HERMES_GATEWAY_PORT, both read by the gateway itself). The figures behind each setting are in README.md
// ("Process managers").
/* global module, require, __dirname -- a CommonJS file: PM2 loads ecosystem files with require() */
'use strict';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- PM2 requires a CommonJS ecosystem file
const path = require('node:path');

// The gateway's own stop budget: the queued messages are committed (or spooled) within it, then the process
// exits 143/130 (all on disk) or 74 (not all). config.yaml's gateway.shutdown_flush_budget_ms is 5,000 by default.
const STOP_BUDGET_MS = 5000;

module.exports = {
  apps: [
    {
      name: 'hermes-gateway',
      script: path.join(__dirname, 'dist', 'bin.js'),
      args: ['--stop-budget-ms', String(STOP_BUDGET_MS)],
      // One gateway per home: the home's gateway lock refuses a second one (exit 2), so never cluster mode.
      exec_mode: 'fork',
      instances: 1,
      // PM2 sends SIGINT (PM2_KILL_SIGNAL), then SIGKILL after kill_timeout: 1,600 ms by default, shorter than
      // the stop budget. The budget plus the time to exit and release the lock, plus a margin.
      kill_timeout: STOP_BUDGET_MS + 3000,
      // The gateway sends "ready" over IPC only once the spool is recovered into state.db (/readyz 200), so a
      // restart or a reload is complete only then. listen_timeout bounds the wait: the recovery of a large spool.
      wait_ready: true,
      listen_timeout: 60000,
      autorestart: true,
      // A gateway killed shortly after its start is restarted as well (a crash loop still ends as "errored").
      min_uptime: 1000,
      max_restarts: 50,
    },
  ],
};
