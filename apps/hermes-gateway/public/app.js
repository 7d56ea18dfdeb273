/* global document, fetch, crypto */
// The gateway's page: no build step, no dependency. Text is always inserted as text, never as HTML.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const status = (text) => {
    $('status').textContent = text;
  };
  let key = $('session').value.trim();
  let timer;

  function render(messages) {
    const list = $('transcript');
    list.replaceChildren(
      ...messages.map((m) => {
        const li = document.createElement('li');
        li.className = m.role;
        li.dataset.id = String(m.id);
        const role = document.createElement('span');
        role.className = 'role';
        role.textContent = m.role;
        li.append(role, document.createTextNode(typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
        return li;
      }),
    );
  }

  async function poll() {
    try {
      const res = await fetch(`/v1/sessions/${encodeURIComponent(key)}`);
      if (res.status === 404) render([]);
      else if (res.ok) render((await res.json()).messages);
      else status(`transcript: HTTP ${res.status}`);
    } catch (err) {
      status(`transcript: ${err.message}`);
    }
  }

  function open() {
    key = $('session').value.trim();
    clearInterval(timer);
    void poll();
    timer = setInterval(poll, 500);
  }

  $('session-form').addEventListener('submit', (e) => {
    e.preventDefault();
    open();
  });

  $('message-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const text = $('text').value;
    if (text.trim() === '') return;
    const idempotencyKey = crypto.randomUUID();
    status('sending…');
    // A lost response is retried with the same Idempotency-Key: the gateway stores the message once.
    for (let attempt = 1; attempt <= 3; attempt++) {
      try {
        const res = await fetch(`/v1/sessions/${encodeURIComponent(key)}/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
          body: JSON.stringify({ text }),
        });
        const body = await res.json();
        if (!res.ok) {
          status(`not sent: ${body.error?.message ?? res.status}`);
          return;
        }
        $('text').value = '';
        status(`stored (${body.status}${body.id === null ? '' : `, id ${body.id}`})`);
        void poll();
        return;
      } catch (err) {
        status(`retrying (${attempt}): ${err.message}`);
      }
    }
  });

  $('save').addEventListener('click', async () => {
    const res = await fetch(`/v1/sessions/${encodeURIComponent(key)}/save?format=html`, { method: 'POST' });
    if (!res.ok) {
      status(`save failed: HTTP ${res.status}`);
      return;
    }
    const disposition = res.headers.get('content-disposition') ?? '';
    const name = /filename="([^"]+)"/.exec(disposition)?.[1] ?? 'transcript.html';
    const url = URL.createObjectURL(await res.blob());
    const a = document.createElement('a');
    a.href = url;
    a.download = name;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
    status(`saved as ${name}`);
  });

  open();
})();
