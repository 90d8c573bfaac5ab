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
 *
 * The answer is streamed (server-sent events over fetch): while Lore works,
 * each stage it finishes updates the status line (searching, writing,
 * checking); the answer's text follows once it has passed the grounding
 * check, then its citations, numbered as the text cites them. Each citation
 * shows the sentence of its page that says what the answer took from it
 * (hover or focus the citation, or press its quote button), the answer's
 * words in it marked. A refusal lists the pages that may be related, each
 * with its sentence closest to the question, apart from any answer.
 *
 * Under each answer (and refusal) a thumbs pair rates it (POST
 * /answer/feedback with the answer's trace id and the same key); after a
 * thumbs-down an optional comment box asks what was wrong. Both are
 * buttons, so they are reached with Tab and pressed with Enter or Space.
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
    '.launcher,.panel{z-index:2147483000}' +
    '.launcher{position:fixed;right:20px;bottom:20px;border:0;border-radius:24px;padding:12px 18px;' +
    'background:#1f4e79;color:#fff;font:600 14px system-ui,sans-serif;cursor:pointer;box-shadow:0 2px 8px rgba(0,0,0,.25)}' +
    '.panel{position:fixed;right:20px;bottom:76px;width:360px;max-width:calc(100vw - 40px);max-height:70vh;display:none;' +
    'flex-direction:column;background:#fff;color:#1b1b1b;border-radius:10px;box-shadow:0 4px 24px rgba(0,0,0,.25);' +
    'font:14px/1.45 system-ui,sans-serif;overflow:hidden}' +
    '.panel.open{display:flex}' +
    'header{display:flex;align-items:center;justify-content:space-between;padding:10px 14px;background:#1f4e79;color:#fff;font-weight:600}' +
    'button.close{border:0;background:transparent;color:#fff;font:600 18px/1 system-ui,sans-serif;cursor:pointer;padding:0 2px}' +
    '.log{flex:1;overflow:auto;padding:10px 14px}' +
    '.q{font-weight:600;margin:10px 0 4px}' +
    '.a{white-space:pre-wrap}' +
    '.a.pending{color:#6b6b6b;font-style:italic}' +
    '.a.refused{color:#6b6b6b}' +
    '.cites{margin:6px 0 0;padding-left:26px;font-size:13px}' +
    '.cites button.quote{margin-left:4px;border:1px solid #c8c8c8;border-radius:4px;background:#fff;padding:0 5px;font:inherit;cursor:pointer}' +
    '.cites button.quote:focus-visible{outline:2px solid #1f4e79;outline-offset:1px}' +
    'blockquote.support{margin:4px 0;padding:4px 8px;border-left:3px solid #1f4e79;background:#f4f7fa;color:#333}' +
    'blockquote.support mark{background:#fde99b;color:inherit}' +
    '.related{margin:8px 0 0;font-size:13px}' +
    '.related ul{margin:4px 0 0;padding-left:18px}' +
    '.error{color:#a4262c}' +
    '.rate{display:flex;align-items:center;gap:6px;margin:6px 0 0;font-size:13px;color:#555}' +
    '.rate button{border:1px solid #c8c8c8;border-radius:6px;background:#fff;padding:2px 8px;font:inherit;cursor:pointer}' +
    '.rate button[aria-pressed=true]{background:#1f4e79;color:#fff;border-color:#1f4e79}' +
    '.rate button:focus-visible{outline:2px solid #1f4e79;outline-offset:1px}' +
    '.why{display:flex;gap:6px;margin:6px 0 0}' +
    '.why textarea{flex:1;min-height:48px;padding:6px;border:1px solid #c8c8c8;border-radius:6px;font:inherit;resize:vertical}' +
    'form{display:flex;gap:6px;padding:10px;border-top:1px solid #e3e3e3}' +
    'input{flex:1;padding:8px;border:1px solid #c8c8c8;border-radius:6px;font:inherit}' +
    'button.ask{padding:8px 12px;border:0;border-radius:6px;background:#1f4e79;color:#fff;font:inherit;cursor:pointer}' +
    'button:disabled,input:read-only{opacity:.6;cursor:progress}' +
    '</style>' +
    '<button class="launcher" type="button" aria-expanded="false"></button>' +
    '<section class="panel" aria-label="">' +
    '<header><span class="title"></span><button class="close" type="button" aria-label="Close">×</button></header>' +
    '<div class="log" aria-live="polite"></div>' +
    '<form><input name="question" autocomplete="off" placeholder="Type your question" aria-label="Your question">' +
    '<button class="ask" type="submit">Ask</button></form></section>';

  var launcher = root.querySelector('.launcher');
  var panel = root.querySelector('.panel');
  var log = root.querySelector('.log');
  var form = root.querySelector('form');
  var input = root.querySelector('input');
  var ask = root.querySelector('button.ask');
  launcher.textContent = title;
  panel.setAttribute('aria-label', title);
  root.querySelector('.title').textContent = title;

  function setOpen(open) {
    panel.classList.toggle('open', open);
    launcher.setAttribute('aria-expanded', String(open));
    if (open) input.focus();
    else launcher.focus();
  }
  launcher.addEventListener('click', function () {
    setOpen(!panel.classList.contains('open'));
  });
  root.querySelector('button.close').addEventListener('click', function () {
    setOpen(false);
  });
  panel.addEventListener('keydown', function (event) {
    if (event.key === 'Escape') setOpen(false);
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

  // What the visitor reads while a stage of the run is under way.
  var STATUS = {
    readiness: 'Searching the documentation…',
    semantic_cache: 'Searching the documentation…',
    retrieval: 'Reading what was found…',
    prompt: 'Writing an answer…',
    generation: 'Checking the answer against the sources…',
    grounding: 'Checking the answer against the sources…',
    escalation: 'Checking the answer against the sources…',
  };

  /** A link to a page (or its title alone when its address is not http). */
  function pageLink(url, label) {
    var href = url && safeUrl(url);
    if (!href) return document.createTextNode(label);
    var link = document.createElement('a');
    link.href = href;
    link.target = '_blank';
    link.rel = 'noopener noreferrer';
    link.textContent = label;
    return link;
  }

  /**
   * A passage's span as a quote, with the marked words in <mark>: `marks`
   * are [start, end) ranges of code points of `span.quote`.
   */
  function quoteOf(span) {
    var quote = document.createElement('blockquote');
    quote.className = 'support';
    var chars = Array.from(span.quote || '');
    var at = 0;
    (span.marks || []).forEach(function (mark) {
      if (mark[0] < at || mark[1] > chars.length) return;
      quote.appendChild(document.createTextNode(chars.slice(at, mark[0]).join('')));
      var marked = document.createElement('mark');
      marked.textContent = chars.slice(mark[0], mark[1]).join('');
      quote.appendChild(marked);
      at = mark[1];
    });
    quote.appendChild(document.createTextNode(chars.slice(at).join('')));
    return quote;
  }

  function showCitations(citations, statements) {
    if (!citations || !citations.length) return;
    var list = add('ol', 'cites');
    citations.forEach(function (c) {
      var item = document.createElement('li');
      // Numbered as the answer's text cites it: [2] is item 2.
      item.value = c.index;
      item.appendChild(pageLink(c.url, c.title || c.url || 'Source'));
      // The sentences of this page the answer's statements rest on.
      var spans = (statements || []).filter(function (s) {
        return s.citation === c.index;
      });
      if (spans.length) {
        var quotes = document.createElement('div');
        quotes.hidden = true;
        spans.forEach(function (s) {
          quotes.appendChild(quoteOf(s.support));
        });
        var toggle = document.createElement('button');
        toggle.type = 'button';
        toggle.className = 'quote';
        toggle.textContent = '\u201c\u201d';
        toggle.setAttribute('aria-label', 'Show the supporting sentence');
        toggle.setAttribute('aria-expanded', 'false');
        var show = function (open) {
          quotes.hidden = !open;
          toggle.setAttribute('aria-expanded', String(open));
        };
        var pinned = false;
        toggle.addEventListener('click', function () {
          pinned = !pinned;
          show(pinned);
        });
        item.addEventListener('mouseenter', function () {
          show(true);
        });
        item.addEventListener('mouseleave', function () {
          show(pinned);
        });
        item.appendChild(toggle);
        item.appendChild(quotes);
      }
      list.appendChild(item);
    });
  }

  /** A refusal's maybe-related pages: a list apart from any answer. */
  function showRelated(related) {
    if (!related || !related.length) return;
    var box = add('div', 'related');
    box.appendChild(document.createTextNode('These pages may be related:'));
    var list = document.createElement('ul');
    related.forEach(function (r) {
      var item = document.createElement('li');
      item.appendChild(pageLink(r.url, r.title || r.url || 'A page'));
      item.appendChild(quoteOf(r.sentence));
      list.appendChild(item);
    });
    box.appendChild(list);
  }

  /** Sends a rating of the answer `traceId`; resolves to its stored form. */
  function rate(traceId, helpful, comment) {
    var body = { trace_id: traceId, helpful: helpful };
    if (comment) body.comment = comment;
    return fetch(base + '/answer/feedback', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify(body),
    }).then(function (response) {
      return response.ok ? response.json() : failure(response);
    });
  }

  /**
   * The thumbs pair under an answer: a thank-you once rated; after a
   * thumbs-down, an optional comment box (sent with a second rating, which
   * replaces the first).
   */
  function showRating(traceId) {
    var bar = add('div', 'rate');
    bar.setAttribute('role', 'group');
    bar.setAttribute('aria-label', 'Was this answer helpful?');
    var label = document.createElement('span');
    label.textContent = 'Helpful?';
    function thumb(className, text, name) {
      var button = document.createElement('button');
      button.type = 'button';
      button.className = className;
      button.textContent = text;
      button.setAttribute('aria-label', name);
      button.setAttribute('aria-pressed', 'false');
      return button;
    }
    var up = thumb('up', '👍', 'Helpful');
    var down = thumb('down', '👎', 'Not helpful');
    var note = document.createElement('span');
    note.className = 'note';
    note.setAttribute('role', 'status');
    bar.appendChild(label);
    bar.appendChild(up);
    bar.appendChild(down);
    bar.appendChild(note);
    var why = null;
    function choose(helpful) {
      up.setAttribute('aria-pressed', String(helpful));
      down.setAttribute('aria-pressed', String(!helpful));
      note.textContent = '';
      rate(traceId, helpful).then(
        function () {
          note.textContent = 'Thank you!';
          if (helpful) {
            if (why) why.remove();
            why = null;
          } else if (!why) {
            why = askWhy();
          }
        },
        function (error) {
          note.textContent = error.message;
        }
      );
    }
    function askWhy() {
      var box = document.createElement('form');
      box.className = 'why';
      var text = document.createElement('textarea');
      text.name = 'comment';
      text.maxLength = 1000;
      text.placeholder = 'What was wrong or missing? (optional)';
      text.setAttribute('aria-label', 'What was wrong or missing? (optional)');
      var send = document.createElement('button');
      send.type = 'submit';
      send.className = 'ask';
      send.textContent = 'Send';
      box.appendChild(text);
      box.appendChild(send);
      box.addEventListener('submit', function (event) {
        event.preventDefault();
        var comment = text.value.trim();
        if (!comment) return;
        send.disabled = true;
        rate(traceId, false, comment).then(
          function () {
            box.remove();
            why = null;
            note.textContent = 'Thank you for telling us.';
          },
          function (error) {
            send.disabled = false;
            note.textContent = error.message;
          }
        );
      });
      bar.insertAdjacentElement('afterend', box);
      text.focus();
      return box;
    }
    up.addEventListener('click', function () {
      choose(true);
    });
    down.addEventListener('click', function () {
      choose(false);
    });
  }

  /** Reads server-sent events from `response`, calling `on(event, data)`. */
  function readEvents(response, on) {
    var reader = response.body.getReader();
    var decoder = new TextDecoder();
    var buffered = '';
    function dispatch(block) {
      var name = 'message';
      var data = [];
      block.split('\n').forEach(function (line) {
        if (line.indexOf('event:') === 0) name = line.slice(6).trim();
        else if (line.indexOf('data:') === 0) data.push(line.slice(5).replace(/^ /, ''));
      });
      if (data.length) on(name, JSON.parse(data.join('\n')));
    }
    function pump() {
      return reader.read().then(function (chunk) {
        buffered += decoder.decode(chunk.value || new Uint8Array(), { stream: !chunk.done });
        var blocks = buffered.split(/\r?\n\r?\n/);
        buffered = chunk.done ? '' : blocks.pop();
        blocks.forEach(function (block) {
          if (block.trim()) dispatch(block);
        });
        if (!chunk.done) return pump();
      });
    }
    return pump();
  }

  /** The error a failed reply carries, whatever its body is. */
  function failure(response) {
    return response
      .json()
      .then(
        function (body) {
          return (body && body.error && body.error.message) || null;
        },
        function () {
          return null;
        }
      )
      .then(function (message) {
        throw new Error(message || 'Lore could not answer (status ' + response.status + ').');
      });
  }

  // While an answer is on its way the field is read-only (not disabled, so
  // it keeps the focus and Escape still closes the panel).
  function setBusy(busy) {
    input.readOnly = busy;
    ask.disabled = busy;
  }

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    var question = input.value.trim();
    if (!question || input.readOnly) return;
    input.value = '';
    add('p', 'q', question);
    var pending = add('p', 'a pending', 'Searching the documentation…');
    var streamed = '';
    var finished = false;
    setBusy(true);
    fetch(base + '/answer', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'x-api-key': key },
      body: JSON.stringify({ question: question, stream: true }),
    })
      .then(function (response) {
        if (!response.ok) return failure(response);
        return readEvents(response, function (name, data) {
          if (name === 'stage' && !streamed && STATUS[data.stage]) {
            pending.textContent = STATUS[data.stage];
          } else if (name === 'token') {
            streamed += data.text;
            pending.className = 'a';
            pending.textContent = streamed;
          } else if (name === 'answer') {
            finished = true;
            pending.className = data.refused ? 'a refused' : 'a';
            pending.textContent = data.answer;
            showCitations(data.citations, data.statements);
            if (data.refused) showRelated(data.related);
            if (data.feedback && data.feedback.trace_id) showRating(data.feedback.trace_id);
          } else if (name === 'error') {
            throw new Error((data.error && data.error.message) || 'Lore could not answer.');
          }
          log.scrollTop = log.scrollHeight;
        }).then(function () {
          if (!finished) throw new Error('The answer was cut off; please ask again.');
        });
      })
      .catch(function (error) {
        pending.className = 'a error';
        pending.textContent = error.message;
      })
      .then(function () {
        setBusy(false);
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
