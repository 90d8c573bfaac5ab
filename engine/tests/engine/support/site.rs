//! A documentation website generated for the crawler tests, served on
//! 127.0.0.1 by axum. Its shape is known exactly, so tests can assert which
//! pages a sync indexes:
//!
//! - `/docs/` (an index linking every page) and `/docs/page-1` … `/docs/page-N`,
//!   each with navigation, header and footer boilerplate around its own text;
//! - `/robots.txt` disallowing `/private/` and naming the sitemap;
//! - `/sitemap.xml`, a sitemap index of a gzipped sitemap and a plain one,
//!   with `lastmod` per page;
//! - `/private/secret` (listed and linked, disallowed by robots.txt);
//! - `/old-page`, a 301 redirect to `/docs/page-3`;
//! - `/docs/page-5-copy`, the same text as `/docs/page-5` (a duplicate);
//! - `/docs/page-7-print`, naming `/docs/page-7` as its canonical URL;
//! - an external link, out of scope.
//!
//! Pages carry an ETag and answer `If-None-Match` with 304. Every request is
//! counted, and pages can be changed while the site runs.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

const TOPICS: [&str; 12] = [
    "installing the server on Linux with the package manager",
    "configuring single sign-on through an identity provider",
    "backing up the database and restoring it on a new machine",
    "tuning the search cutoff and the fusion weights",
    "writing webhooks that notify your chat channel",
    "rotating the API keys of a hosted model provider",
    "importing Markdown files from a documentation repository",
    "monitoring latency percentiles on the dashboard",
    "running behind a reverse proxy with TLS termination",
    "limiting the rate of requests from embedded widgets",
    "translating answers for a multilingual audience",
    "exporting usage reports for finance each month",
];

const COLOURS: [&str; 8] = ["amber", "cobalt", "crimson", "emerald", "indigo", "saffron", "teal", "violet"];

#[derive(Clone)]
pub struct Site {
    pub base_url: String,
    pub pages: usize,
    state: Arc<SiteState>,
}

struct SiteState {
    pages: usize,
    /// Page number → (body text, lastmod).
    texts: Mutex<HashMap<usize, (String, String)>>,
    requests: AtomicUsize,
    page_fetches: AtomicUsize,
    delay: Duration,
}

/// The text of page `n` before any change.
pub fn page_text(n: usize) -> String {
    let topic = TOPICS[n % TOPICS.len()];
    let colour = COLOURS[n % COLOURS.len()];
    format!(
        "Guide number {n} explains {topic}. Step one for guide {n}: open the {colour} panel and read setting {n}. \
         Step two: confirm that option {n} is enabled, then restart. Guide {n} ends with a checklist of {} items.",
        n + 3
    )
}

impl Site {
    /// Serves a site with `pages` documentation pages; each page response
    /// waits `delay` (to make runs slow enough to interrupt).
    pub async fn start(pages: usize, delay: Duration) -> Site {
        let texts = (1..=pages).map(|n| (n, (page_text(n), "2026-11-01".to_owned()))).collect();
        let state = Arc::new(SiteState {
            pages,
            texts: Mutex::new(texts),
            requests: AtomicUsize::new(0),
            page_fetches: AtomicUsize::new(0),
            delay,
        });
        let app = Router::new()
            .route("/robots.txt", get(robots))
            .route("/sitemap.xml", get(sitemap_index))
            .route("/sitemap-docs.xml.gz", get(sitemap_docs))
            .route("/sitemap-extra.xml", get(sitemap_extra))
            .route("/docs/", get(index))
            .route("/docs/{page}", get(page))
            .route("/private/secret", get(secret))
            .route("/old-page", get(old_page))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Site { base_url: format!("http://{addr}"), pages, state }
    }

    /// The URLs a correct sync indexes from the sitemap: every doc page.
    pub fn expected_sitemap_uris(&self) -> Vec<String> {
        let mut uris: Vec<String> =
            (1..=self.pages).map(|n| format!("{}/docs/page-{n}", self.base_url)).collect();
        uris.sort();
        uris
    }

    /// A crawl from `/docs/` also indexes the index page itself.
    pub fn expected_crawl_uris(&self) -> Vec<String> {
        let mut uris = self.expected_sitemap_uris();
        uris.push(format!("{}/docs/", self.base_url));
        uris.sort();
        uris
    }

    /// Changes the text (and lastmod) of page `n`.
    pub fn change_page(&self, n: usize, text: &str) {
        self.state.texts.lock().unwrap().insert(n, (text.to_owned(), "2026-11-20".to_owned()));
    }

    pub fn requests(&self) -> usize {
        self.state.requests.load(Ordering::SeqCst)
    }

    /// Full (200) responses of doc pages.
    pub fn page_fetches(&self) -> usize {
        self.state.page_fetches.load(Ordering::SeqCst)
    }
}

/// Page `n` of `pages` as the site serves it, `text` its paragraph: also
/// what a test uploads as the same guide in a file.
pub fn page_html(n: usize, pages: usize, text: &str, canonical: Option<&str>) -> String {
    let next = if n < pages {
        format!(r#"<p><a href="/docs/page-{}">Next guide</a></p>"#, n + 1)
    } else {
        String::new()
    };
    html(
        &format!("Guide {n} · Acme Docs"),
        canonical,
        &format!("<h1>Guide {n}</h1><h2>Overview</h2><p>{text}</p>{next}"),
    )
}

fn html(title: &str, canonical: Option<&str>, body: &str) -> String {
    let canonical =
        canonical.map(|href| format!(r#"<link rel="canonical" href="{href}">"#)).unwrap_or_default();
    format!(
        r#"<!doctype html><html><head><title>{title}</title>{canonical}</head><body>
<header><a href="/docs/">Acme Docs</a> <span>Search the docs</span></header>
<nav><ul><li><a href="/docs/page-1">Getting started</a></li><li><a href="/docs/page-2">Configuration</a></li><li><a href="/private/secret">Internal</a></li></ul></nav>
<main>{body}</main>
<footer>Copyright Acme Corporation. All rights reserved. <a href="https://example.invalid/legal">Legal</a></footer>
</body></html>"#
    )
}

async fn robots(State(state): State<Arc<SiteState>>, headers: HeaderMap) -> String {
    state.requests.fetch_add(1, Ordering::SeqCst);
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    format!("User-agent: *\nDisallow: /private/\n\nSitemap: http://{host}/sitemap.xml\n")
}

fn xml_response(body: Vec<u8>, content_type: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

async fn sitemap_index(State(state): State<Arc<SiteState>>, headers: HeaderMap) -> Response {
    state.requests.fetch_add(1, Ordering::SeqCst);
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    let body = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>http://{host}/sitemap-docs.xml.gz</loc></sitemap>
<sitemap><loc>http://{host}/sitemap-extra.xml</loc></sitemap>
</sitemapindex>"#
    );
    xml_response(body.into_bytes(), "application/xml")
}

async fn sitemap_docs(State(state): State<Arc<SiteState>>, headers: HeaderMap) -> Response {
    state.requests.fetch_add(1, Ordering::SeqCst);
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    let mut xml = String::from(
        r#"<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#,
    );
    let texts = state.texts.lock().unwrap().clone();
    for n in 1..=state.pages {
        let lastmod = &texts[&n].1;
        xml.push_str(&format!(
            "<url><loc>http://{host}/docs/page-{n}</loc><lastmod>{lastmod}</lastmod></url>"
        ));
    }
    xml.push_str("</urlset>");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(xml.as_bytes()).unwrap();
    xml_response(gz.finish().unwrap(), "application/gzip")
}

async fn sitemap_extra(State(state): State<Arc<SiteState>>, headers: HeaderMap) -> Response {
    state.requests.fetch_add(1, Ordering::SeqCst);
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    let body = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>http://{host}/private/secret</loc></url>
<url><loc>http://{host}/old-page</loc></url>
<url><loc>http://{host}/docs/page-5-copy</loc></url>
<url><loc>http://{host}/docs/page-7-print</loc></url>
<url><loc>https://example.invalid/elsewhere</loc></url>
</urlset>"#
    );
    xml_response(body.into_bytes(), "application/xml")
}

async fn index(State(state): State<Arc<SiteState>>) -> Response {
    state.requests.fetch_add(1, Ordering::SeqCst);
    let mut links =
        String::from("<h1>Documentation</h1><p>Every guide of the Acme manual, in order.</p><ul>");
    for n in 1..=state.pages {
        links.push_str(&format!(r#"<li><a href="/docs/page-{n}">Guide {n}</a></li>"#));
    }
    links.push_str(r#"<li><a href="/old-page">Old guide</a></li><li><a href="/docs/page-5-copy">Guide 5 (copy)</a></li><li><a href="/docs/page-7-print">Guide 7 (print)</a></li><li><a href="https://example.invalid/elsewhere">Elsewhere</a></li></ul>"#);
    axum::response::Html(html("Acme Docs", None, &links)).into_response()
}

async fn page(State(state): State<Arc<SiteState>>, Path(page): Path<String>, headers: HeaderMap) -> Response {
    state.requests.fetch_add(1, Ordering::SeqCst);
    if !state.delay.is_zero() {
        tokio::time::sleep(state.delay).await;
    }
    let (number, variant) = match page.strip_prefix("page-") {
        Some(rest) => match rest.split_once('-') {
            Some((n, variant)) => (n.parse::<usize>().ok(), Some(variant.to_owned())),
            None => (rest.parse::<usize>().ok(), None),
        },
        None => (None, None),
    };
    let Some(n) = number.filter(|n| (1..=state.pages).contains(n)) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let text = state.texts.lock().unwrap()[&n].0.clone();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default().to_owned();
    let canonical = match variant.as_deref() {
        Some("print") => Some(format!("http://{host}/docs/page-{n}")),
        Some("copy") | None => None,
        Some(_) => return StatusCode::NOT_FOUND.into_response(),
    };
    let body = page_html(n, state.pages, &text, canonical.as_deref());
    let etag = format!("\"{:x}\"", body.len() * 31 + text.bytes().map(usize::from).sum::<usize>());
    if headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) == Some(etag.as_str()) {
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response();
    }
    state.page_fetches.fetch_add(1, Ordering::SeqCst);
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8".to_owned()), (header::ETAG, etag)], body)
        .into_response()
}

async fn secret(State(state): State<Arc<SiteState>>) -> Response {
    state.requests.fetch_add(1, Ordering::SeqCst);
    axum::response::Html(html("Secret", None, "<p>Internal salaries and other private matters.</p>"))
        .into_response()
}

async fn old_page(State(state): State<Arc<SiteState>>) -> Response {
    state.requests.fetch_add(1, Ordering::SeqCst);
    (StatusCode::MOVED_PERMANENTLY, [(header::LOCATION, "/docs/page-3")]).into_response()
}
