/*
 * Lore's embeddable widget: a launcher button and a chat panel that ask
 * Lore with a widget key and show answers with their citations as links.
 *
 *   <script src="https://lore.example.com/widget.js"
 *           data-key="lore_wk_…" data-title="Ask the docs" async></script>
 *
 * The key is a widget key: it may only answer, only from the origins it
 * lists, at its rate limit. Everything renders inside a shadow root, so the
 * host page's styles do not leak in and ours do not leak out.
 */
(function () {
  'use strict';
  var script = document.currentScript;
  if (!script || window.__loreWidget) return;
  window.__loreWidget = true;
  var base = new URL(script.src).origin;
  var key = script.getAttribute('data-key') || '';
  var title = script.getAttribute('data-title') || 'Ask a question';

  var host = document.createElement('div');
  host.setAttribute('data-lore-widget', '');
  var root = host.attachShadow({ mode: 'open' });
  root.innerHTML =
    '<style>' +
    ':host{all:initial}' +
    '.launcher{position:fixed;right:20px;bottom:20px;border:0;border-radius:24px;padding:12px 18px;' +
    'background:#1f4e79;color:#fff;font:600 14px system-ui,sans-serif;cursor:pointer;box-shadow:0 2px 8px rgba(0,0,0,.25)}' +
    '.panel{position:fixed;right:20px;bottom:76px;width:360px;max-width:calc(100vw - 40px);max-height:70vh;display:none;' +
    'flex-direction:column;background:#fff;color:#1b1b1b;border-radius:10px;box-shadow:0 4px 24px rgba(0,0,0,.25);' +
    'font:14px/1.45 system-ui,sans-serif;overflow:hidden}' +
    '.panel.open{display:flex}' +
    'header{padding:10px 14px;background:#1f4e79;color:#fff;font-weight:600}' +
    '.log{flex:1;overflow:auto;padding:10px 14px}' +
    '.q{font-weight:600;margin:10px 0 4px}' +
    '.a{white-space:pre-wrap}' +
    '.a.refused{color:#6b6b6b}' +
    '.cites{margin:6px 0 0;padding-left:18px;font-size:13px}' +
    '.error{color:#a4262c}' +
    'form{display:flex;gap:6px;padding:10px;border-top:1px solid #e3e3e3}' +
    'input{flex:1;padding:8px;border:1px solid #c8c8c8;border-radius:6px;font:inherit}' +
    'button.ask{padding:8px 12px;border:0;border-radius:6px;background:#1f4e79;color:#fff;font:inherit;cursor:pointer}' +
    '</style>' +
    '<button class="launcher" type="button" aria-expanded="false"></button>' +
    '<section class="panel" role="dialog" aria-label="">' +
    '<header></header><div class="log" aria-live="polite"></div>' +
    '<form><input name="question" autocomplete="off" placeholder="Type your question" aria-label="Your question">' +
    '<button class="ask" type="submit">Ask</button></form></section>';

  var launcher = root.querySelector('.launcher');
  var panel = root.querySelector('.panel');
  var log = root.querySelector('.log');
  var form = root.querySelector('form');
  var input = root.querySelector('input');
  launcher.textContent = title;
  panel.setAttribute('aria-label', title);
  root.querySelector('header').textContent = title;

  launcher.addEventListener('click', function () {
    var open = panel.classList.toggle('open');
    launcher.setAttribute('aria-expanded', String(open));
    if (open) input.focus();
  });

  function add(tag, className, text) {
    var el = document.createElement(tag);
    if (className) el.className = className;
    if (text !== undefined) el.textContent = text;
    log.appendChild(el);
    log.scrollTop = log.scrollHeight;
    return el;
  }

  function safeUrl(raw) {
    try {
      var url = new URL(raw);
      return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
    } catch (e) {
      return null;
    }
  }

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    var question = input.value.trim();
    if (!question) return;
    input.value = '';
    add('p', 'q', question);
    var pending = add('p', 'a', '…');
    fetch(base + '/answer', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ question: question }),
    })
      .then(function (response) {
        return response.json().then(function (body) {
          if (!response.ok) throw new Error((body.error && body.error.message) || 'Lore could not answer.');
          return body;
        });
      })
      .then(function (body) {
        pending.textContent = body.answer;
        if (body.refused) pending.classList.add('refused');
        if (body.citations && body.citations.length) {
          var list = add('ol', 'cites');
          body.citations.forEach(function (c) {
            var item = document.createElement('li');
            var href = c.url && safeUrl(c.url);
            var label = c.title || c.url || 'Source';
            if (href) {
              var link = document.createElement('a');
              link.href = href;
              link.target = '_blank';
              link.rel = 'noopener noreferrer';
              link.textContent = label;
              item.appendChild(link);
            } else {
              item.textContent = label;
            }
            list.appendChild(item);
          });
        }
      })
      .catch(function (error) {
        pending.className = 'a error';
        pending.textContent = error.message;
      });
  });

  // An async script in <head> can run before <body> exists.
  if (document.body) {
    document.body.appendChild(host);
  } else {
    document.addEventListener('DOMContentLoaded', function () {
      document.body.appendChild(host);
    });
  }
})();
