//! The website crawler: discovers pages from the site's sitemap (sitemap
//! indexes and gzipped sitemaps included, with `lastmod`) or by following
//! links from the start URL, within the start URL's host, the include and
//! exclude patterns, robots.txt, and the page and depth limits.
//!
//! Politeness: a few requests in flight at most (`ingest.crawl_concurrency`),
//! robots.txt's crawl-delay honoured, conditional requests (ETag,
//! Last-Modified) and sitemap `lastmod` so unchanged pages are not even
//! downloaded again. Pages are fetched concurrently but processed in
//! discovery order, so which of two duplicates is kept never varies.
//!
//! Safety: unless `ingest.allow_private_addresses` is set, no request goes to
//! a private, loopback or link-local address: names are resolved through a
//! resolver that drops such addresses, and IP literals are checked before
//! each request and each redirect.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use entity::{document, source};
use futures::StreamExt;
use globset::{Glob, GlobSet, GlobSetBuilder};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use url::Url;

use super::jobs::ProgressHandle;
use super::{extract_off_thread, text_hash, Fetched, Indexer, IngestError};
use crate::settings::Settings;
use crate::sources::{parse_website_config, Discovery, WebsiteConfig};
use crate::{Error, Result};

/// The crawler's name in User-Agent and for robots.txt rules.
pub const AGENT: &str = "LoreBot";
/// Pages larger than this are skipped.
const MAX_PAGE_BYTES: usize = 10 * 1024 * 1024;
/// Sitemaps (after decompression) larger than this are refused.
const MAX_SITEMAP_BYTES: usize = 50 * 1024 * 1024;
const MAX_SITEMAP_DEPTH: usize = 3;
const MAX_REDIRECTS: usize = 10;

/// Whether `ip` is private, loopback, link-local or otherwise not public.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || a == 0
                || (a == 100 && (64..128).contains(&b)) // carrier-grade NAT
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || (first & 0xfe00) == 0xfc00 // unique local
                || (first & 0xffc0) == 0xfe80 // link-local
                || v6.to_ipv4_mapped().is_some_and(|v4| is_private(IpAddr::V4(v4)))
        }
    }
}

fn refusal(host: &str, ip: IpAddr) -> IngestError {
    IngestError::PrivateAddress(format!(
        "{host} is a private, loopback or link-local address ({ip}); Lore does not crawl those unless ingest.allow_private_addresses is set"
    ))
}

/// Refuses a URL whose host is, or resolves to, a non-public address.
pub async fn check_address(url: &Url, allow_private: bool) -> Result<(), IngestError> {
    if allow_private {
        return Ok(());
    }
    let host = url.host_str().ok_or_else(|| IngestError::InvalidSource(format!("{url} has no host")))?;
    let port = url.port_or_known_default().unwrap_or(80);
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return if is_private(ip) { Err(refusal(host, ip)) } else { Ok(()) };
    }
    let addresses = tokio::net::lookup_host((bare, port))
        .await
        .map_err(|err| IngestError::Fetch(format!("cannot resolve {host}: {err}")))?;
    for address in addresses {
        if is_private(address.ip()) {
            return Err(refusal(host, address.ip()));
        }
    }
    Ok(())
}

/// DNS that never hands out a non-public address.
struct PublicOnlyResolver;

impl reqwest::dns::Resolve for PublicOnlyResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            type BoxError = Box<dyn std::error::Error + Send + Sync>;
            let found: Vec<SocketAddr> = match tokio::net::lookup_host((host.as_str(), 0)).await {
                Ok(addresses) => addresses.collect(),
                Err(err) => return Err(Box::new(err) as BoxError),
            };
            if let Some(private) = found.iter().find(|a| is_private(a.ip())) {
                return Err(Box::new(refusal(&host, private.ip())) as BoxError);
            }
            Ok(Box::new(found.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// A source's crawl: its client, scope and rules.
pub struct Crawler {
    client: reqwest::Client,
    config: WebsiteConfig,
    start: Url,
    include: Option<GlobSet>,
    exclude: Option<GlobSet>,
    robots: Option<texting_robots::Robot>,
    allow_private: bool,
    concurrency: usize,
    delay: Option<Duration>,
}

fn glob_set(patterns: &[String]) -> Result<Option<GlobSet>, IngestError> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        builder.add(
            Glob::new(pattern)
                .map_err(|err| IngestError::InvalidSource(format!("pattern {pattern:?}: {err}")))?,
        );
    }
    builder.build().map(Some).map_err(|err| IngestError::InvalidSource(format!("patterns: {err}")))
}

/// What fetching one URL gave.
enum Page {
    Fetched { final_url: Url, fetched: Box<Fetched> },
    NotModified,
    Skipped,
    Failed(String),
}

impl Crawler {
    pub fn new(settings: &Settings, config: WebsiteConfig) -> Result<Self, IngestError> {
        let start = Url::parse(&config.start_url)
            .map_err(|err| IngestError::InvalidSource(format!("start_url: {err}")))?;
        let allow_private = settings.ingest.allow_private_addresses;
        let start_host = start.host_str().unwrap_or_default().to_owned();
        let start_port = start.port_or_known_default();
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            let next = attempt.url();
            let same_host =
                next.host_str() == Some(start_host.as_str()) && next.port_or_known_default() == start_port;
            if attempt.previous().len() >= MAX_REDIRECTS {
                attempt.error("too many redirects")
            } else if !same_host {
                // Out of scope: stop here; the page is skipped.
                attempt.stop()
            } else {
                attempt.follow()
            }
        });
        let mut builder = reqwest::Client::builder()
            .user_agent(format!("{AGENT}/{} (+{})", env!("CARGO_PKG_VERSION"), settings.base_url()))
            .redirect(policy)
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30));
        if !allow_private {
            builder = builder.dns_resolver(Arc::new(PublicOnlyResolver));
        }
        let client = builder.build().map_err(|err| IngestError::Fetch(format!("HTTP client: {err}")))?;
        Ok(Self {
            include: glob_set(&config.include)?,
            exclude: glob_set(&config.exclude)?,
            client,
            start,
            config,
            robots: None,
            allow_private,
            concurrency: settings.ingest.crawl_concurrency.max(1),
            delay: None,
        })
    }

    /// Same host and port as the start URL, and within the patterns.
    pub fn in_scope(&self, url: &Url) -> bool {
        if !matches!(url.scheme(), "http" | "https")
            || url.host_str() != self.start.host_str()
            || url.port_or_known_default() != self.start.port_or_known_default()
        {
            return false;
        }
        let path = url.path();
        if let Some(include) = &self.include {
            if !include.is_match(path) {
                return false;
            }
        }
        !self.exclude.as_ref().is_some_and(|exclude| exclude.is_match(path))
    }

    fn allowed_by_robots(&self, url: &Url) -> bool {
        self.robots.as_ref().is_none_or(|robot| robot.allowed(url.as_str()))
    }

    /// Reads robots.txt (absent or unreadable: everything allowed).
    async fn load_robots(&mut self) -> Vec<String> {
        let Ok(robots_url) = self.start.join("/robots.txt") else { return Vec::new() };
        let Ok(response) = self.client.get(robots_url).send().await else { return Vec::new() };
        if !response.status().is_success() {
            return Vec::new();
        }
        let Ok(body) = response.bytes().await else { return Vec::new() };
        match texting_robots::Robot::new(AGENT, &body) {
            Ok(robot) => {
                self.delay = robot.delay.map(|seconds| Duration::from_secs_f32(seconds.clamp(0.0, 10.0)));
                let sitemaps = robot.sitemaps.clone();
                self.robots = Some(robot);
                sitemaps
            }
            Err(err) => {
                tracing::warn!(error = %err, "robots.txt could not be parsed; crawling without it");
                Vec::new()
            }
        }
    }

    async fn get(
        &self,
        url: &Url,
        validators: Option<&document::Model>,
    ) -> Result<reqwest::Response, String> {
        check_address(url, self.allow_private).await.map_err(|err| err.to_string())?;
        if let Some(delay) = self.delay {
            tokio::time::sleep(delay).await;
        }
        let mut request = self.client.get(url.clone());
        if let Some(doc) = validators {
            if let Some(etag) = &doc.etag {
                request = request.header(reqwest::header::IF_NONE_MATCH, etag);
            }
            if let Some(modified) = &doc.last_modified {
                request = request.header(reqwest::header::IF_MODIFIED_SINCE, modified);
            }
        }
        request.send().await.map_err(|err| describe(&err))
    }

    /// Reads a body up to `limit` bytes.
    async fn body(response: reqwest::Response, limit: usize) -> Result<Vec<u8>, String> {
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(piece) = stream.next().await {
            let piece = piece.map_err(|err| describe(&err))?;
            if body.len() + piece.len() > limit {
                return Err(format!("larger than {limit} bytes"));
            }
            body.extend_from_slice(&piece);
        }
        Ok(body)
    }

    async fn fetch(
        &self,
        url: &Url,
        lastmod: Option<String>,
        known: Option<document::Model>,
        conditional: bool,
    ) -> Page {
        let validators = known.as_ref().filter(|doc| conditional && doc.status == "indexed");
        let response = match self.get(url, validators).await {
            Ok(response) => response,
            Err(err) => return Page::Failed(err),
        };
        let status = response.status();
        if status == reqwest::StatusCode::NOT_MODIFIED {
            return Page::NotModified;
        }
        if status.is_redirection() {
            return Page::Skipped; // a redirect out of scope
        }
        if !status.is_success() {
            return Page::Failed(format!("HTTP {status}"));
        }
        let final_url = response.url().clone();
        let header = |name: reqwest::header::HeaderName| {
            response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
        };
        let content_type = header(reqwest::header::CONTENT_TYPE);
        let etag = header(reqwest::header::ETAG);
        let last_modified = header(reqwest::header::LAST_MODIFIED);
        let readable = content_type.as_deref().is_none_or(|ct| {
            let mime = ct.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
            matches!(
                mime.as_str(),
                "text/html" | "application/xhtml+xml" | "text/plain" | "text/markdown" | "application/pdf"
            )
        });
        if !readable {
            return Page::Skipped;
        }
        match Self::body(response, MAX_PAGE_BYTES).await {
            Ok(bytes) => Page::Fetched {
                fetched: Box::new(Fetched {
                    uri: final_url.to_string(),
                    url: Some(final_url.to_string()),
                    content_type,
                    bytes,
                    etag,
                    last_modified,
                    lastmod,
                }),
                final_url,
            },
            Err(err) => Page::Failed(err),
        }
    }

    /// Page URLs (with `lastmod`) from the sitemaps, in scope, deduplicated.
    async fn sitemap_entries(&self, listed: Vec<String>) -> Result<Vec<(Url, Option<String>)>, IngestError> {
        let explicit = self.config.sitemap_url.is_some();
        let roots: Vec<String> = match &self.config.sitemap_url {
            Some(url) => vec![url.clone()],
            None if !listed.is_empty() => listed,
            None => self.start.join("/sitemap.xml").map(|u| vec![u.to_string()]).unwrap_or_default(),
        };
        let mut queue: std::collections::VecDeque<(String, usize)> =
            roots.into_iter().map(|u| (u, 0)).collect();
        let mut visited = HashSet::new();
        let mut entries = Vec::new();
        let mut seen = HashSet::new();
        while let Some((raw, depth)) = queue.pop_front() {
            if !visited.insert(raw.clone()) || depth > MAX_SITEMAP_DEPTH {
                continue;
            }
            let Ok(url) = Url::parse(&raw) else { continue };
            let body = match self.get(&url, None).await {
                Ok(response) if response.status().is_success() => {
                    Self::body(response, MAX_SITEMAP_BYTES).await
                }
                Ok(response) => Err(format!("HTTP {}", response.status())),
                Err(err) => Err(err),
            };
            let body = match body.and_then(|bytes| gunzip_if_needed(bytes, MAX_SITEMAP_BYTES)) {
                Ok(body) => body,
                Err(err) if explicit && depth == 0 => {
                    return Err(IngestError::Fetch(format!("the sitemap {raw} could not be read: {err}")))
                }
                Err(err) => {
                    tracing::info!(sitemap = %raw, error = %err, "sitemap not read");
                    continue;
                }
            };
            let parsed = parse_sitemap(&body)
                .map_err(|err| IngestError::Fetch(format!("the sitemap {raw} is not valid XML: {err}")))?;
            for child in parsed.sitemaps {
                queue.push_back((child, depth + 1));
            }
            for (loc, lastmod) in parsed.urls {
                let Ok(mut page) = Url::parse(loc.trim()) else { continue };
                page.set_fragment(None);
                if seen.insert(page.to_string()) {
                    entries.push((page, lastmod));
                }
            }
        }
        Ok(entries)
    }
}

fn describe(err: &reqwest::Error) -> String {
    // The resolver's refusal is the useful part of a connect error.
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(current) = source {
        if let Some(refused) = current.downcast_ref::<IngestError>() {
            return refused.to_string();
        }
        source = current.source();
    }
    if err.is_timeout() {
        "the request timed out".into()
    } else if err.is_connect() {
        "could not connect".into()
    } else {
        format!("the request failed ({err})")
    }
}

/// Decompresses gzip data (sitemap.xml.gz), bounded.
fn gunzip_if_needed(bytes: Vec<u8>, limit: usize) -> Result<Vec<u8>, String> {
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return Ok(bytes);
    }
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes.as_slice())
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|err| format!("bad gzip data: {err}"))?;
    if out.len() > limit {
        return Err(format!("larger than {limit} bytes once decompressed"));
    }
    Ok(out)
}

#[derive(Debug, Default, PartialEq)]
pub struct Sitemap {
    /// Child sitemaps (of a sitemap index).
    pub sitemaps: Vec<String>,
    /// Pages with their `lastmod`.
    pub urls: Vec<(String, Option<String>)>,
}

/// Parses a `<urlset>` or a `<sitemapindex>` (namespaces ignored; entity
/// references such as `&amp;` in URLs resolved).
pub fn parse_sitemap(xml: &[u8]) -> Result<Sitemap, String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(xml);
    reader.config_mut().trim_text(true);
    let mut out = Sitemap::default();
    let mut path: Vec<String> = Vec::new();
    let (mut loc, mut lastmod) = (None::<String>, None::<String>);
    let mut text = String::new();
    let mut buf = Vec::new();
    loop {
        match reader.read_event_into(&mut buf).map_err(|err| err.to_string())? {
            Event::Start(tag) => {
                path.push(tag.local_name().as_ref().to_ascii_lowercase());
                text.clear();
            }
            Event::Text(piece) => text.push_str(&piece),
            Event::CData(piece) => text.push_str(&piece),
            Event::GeneralRef(entity) => {
                if let Ok(Some(c)) = entity.resolve_char_ref() {
                    text.push(c);
                } else {
                    text.push_str(match &*entity {
                        "amp" => "&",
                        "lt" => "<",
                        "gt" => ">",
                        "quot" => "\"",
                        "apos" => "'",
                        _ => "",
                    });
                }
            }
            Event::End(_) => match path.pop().unwrap_or_default().as_str() {
                "loc" => loc = Some(text.trim().to_owned()),
                "lastmod" => lastmod = Some(text.trim().to_owned()),
                "url" => {
                    if let Some(found) = loc.take() {
                        out.urls.push((found, lastmod.take()));
                    }
                    lastmod = None;
                }
                "sitemap" => {
                    if let Some(found) = loc.take() {
                        out.sitemaps.push(found);
                    }
                    lastmod = None;
                }
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    if !path.is_empty() {
        return Err(format!("unclosed element <{}>", path.join("><")));
    }
    Ok(out)
}

/// Links of an HTML page, absolute, without fragments.
fn links_of(html: &[u8], base: &Url) -> Vec<Url> {
    let text = String::from_utf8_lossy(html);
    let page = scraper::Html::parse_document(&text);
    let Ok(anchors) = scraper::Selector::parse("a[href]") else { return Vec::new() };
    page.select(&anchors)
        .filter(|a| !a.value().attr("rel").unwrap_or_default().split_whitespace().any(|r| r == "nofollow"))
        .filter_map(|a| a.value().attr("href"))
        .filter_map(|href| base.join(href.trim()).ok())
        .map(|mut url| {
            url.set_fragment(None);
            url
        })
        .collect()
}

/// What a run has seen so far: canonical URLs and text hashes (duplicates).
#[derive(Default)]
struct Seen {
    uris: HashSet<String>,
    texts: HashMap<String, String>,
    attempted: usize,
    fetched: usize,
}

/// Syncs a website source: discover, fetch, extract, index; then remove the
/// pages that are gone (only after a run that reached the site).
pub async fn sync(
    indexer: &Indexer,
    found: &source::Model,
    progress: &ProgressHandle,
    cancel: tokio::sync::watch::Receiver<bool>,
) -> Result<()> {
    let config = parse_website_config(&found.config)?;
    let mut crawler = Crawler::new(&indexer.lore.settings, config.clone())?;
    check_address(&crawler.start, crawler.allow_private).await?;
    let listed = crawler.load_robots().await;

    let known: HashMap<String, document::Model> = document::Entity::find()
        .filter(document::Column::SourceId.eq(&found.id))
        .all(&indexer.lore.db)
        .await?
        .into_iter()
        .map(|doc| (doc.uri.clone(), doc))
        .collect();
    let mut seen = Seen::default();

    let from_sitemap = match config.discovery {
        Discovery::Sitemap => crawler.sitemap_entries(listed).await?,
        Discovery::Crawl => Vec::new(),
    };
    if !from_sitemap.is_empty() {
        let mut pages = Vec::new();
        for (url, lastmod) in from_sitemap {
            if !crawler.in_scope(&url) || !crawler.allowed_by_robots(&url) {
                progress.add(|p| p.skipped += 1);
                continue;
            }
            if pages.len() >= config.max_pages {
                break;
            }
            pages.push((url, lastmod));
        }
        progress.add(|p| p.discovered += pages.len() as u64);
        visit(indexer, &crawler, found, pages, &known, &mut seen, progress, &cancel, false).await?;
    } else {
        // Breadth-first from the start URL, one depth level at a time.
        let mut level = vec![(crawler.start.clone(), None)];
        let mut queued: HashSet<String> = HashSet::from([crawler.start.to_string()]);
        progress.add(|p| p.discovered += 1);
        for depth in 0..=config.max_depth {
            if level.is_empty() || *cancel.borrow() {
                break;
            }
            let room = config.max_pages.saturating_sub(seen.attempted);
            level.truncate(room);
            let links =
                visit(indexer, &crawler, found, level, &known, &mut seen, progress, &cancel, true).await?;
            let mut next = Vec::new();
            if depth < config.max_depth {
                for link in links {
                    if queued.contains(link.as_str()) {
                        continue;
                    }
                    queued.insert(link.to_string());
                    if !crawler.in_scope(&link) || !crawler.allowed_by_robots(&link) {
                        progress.add(|p| p.skipped += 1);
                        continue;
                    }
                    progress.add(|p| p.discovered += 1);
                    next.push((link, None));
                }
            }
            level = next;
        }
    }

    if seen.attempted > 0 && seen.fetched == 0 {
        return Err(
            IngestError::Fetch(format!("none of the {} pages could be fetched", seen.attempted)).into()
        );
    }
    if !*cancel.borrow() {
        let removed = indexer.remove_unseen(&found.id).await?;
        progress.add(|p| p.removed += removed);
    }
    Ok(())
}

/// Fetches `pages` a few at a time and processes them in order. Returns the
/// in-page links (when `follow`).
#[allow(clippy::too_many_arguments)]
async fn visit(
    indexer: &Indexer,
    crawler: &Crawler,
    found: &source::Model,
    pages: Vec<(Url, Option<String>)>,
    known: &HashMap<String, document::Model>,
    seen: &mut Seen,
    progress: &ProgressHandle,
    cancel: &tokio::sync::watch::Receiver<bool>,
    follow: bool,
) -> Result<Vec<Url>> {
    let concurrency = if crawler.delay.is_some() { 1 } else { crawler.concurrency };
    seen.attempted += pages.len();
    let fetches = futures::stream::iter(pages.into_iter().map(|(url, lastmod)| {
        let doc = known.get(url.as_str()).cloned();
        async move {
            // The sitemap says it has not changed since we indexed it.
            let unchanged_by_lastmod = !indexer.full
                && lastmod.is_some()
                && doc.as_ref().is_some_and(|d| d.status == "indexed" && d.lastmod == lastmod);
            let page = if unchanged_by_lastmod {
                Page::NotModified
            } else {
                // Crawls need the body for its links, so no conditional request then.
                crawler.fetch(&url, lastmod, doc.clone(), !follow && !indexer.full).await
            };
            (url, doc, page)
        }
    }))
    .buffered(concurrency);
    futures::pin_mut!(fetches);

    let mut links = Vec::new();
    while let Some((url, doc, page)) = fetches.next().await {
        if *cancel.borrow() {
            break;
        }
        match page {
            Page::NotModified => {
                seen.fetched += 1;
                match doc {
                    Some(doc) => {
                        // Its text counts as seen, so a copy of it is still a duplicate.
                        seen.uris.insert(doc.uri.clone());
                        if let Some(text) = &doc.text_hash {
                            seen.texts.insert(text.clone(), doc.uri.clone());
                        }
                        indexer.mark_unchanged(&doc).await?.count(progress);
                    }
                    None => progress.add(|p| p.skipped += 1),
                }
            }
            Page::Skipped => progress.add(|p| p.skipped += 1),
            Page::Failed(err) => {
                indexer.record_failure(&found.id, url.as_str(), Some(url.as_str()), &err).await?;
                progress.error(url.as_str(), &err);
            }
            Page::Fetched { final_url, mut fetched } => {
                seen.fetched += 1;
                progress.add(|p| p.fetched += 1);
                if follow && is_html(&fetched) {
                    links.extend(links_of(&fetched.bytes, &final_url));
                }
                let extracted = match extract_off_thread(&fetched, final_url.as_str()).await {
                    Ok(extracted) => extracted,
                    Err(err) => {
                        indexer
                            .record_failure(&found.id, url.as_str(), Some(url.as_str()), &err.to_string())
                            .await?;
                        progress.error(url.as_str(), &err.to_string());
                        continue;
                    }
                };
                progress.add(|p| p.extracted += 1);
                let canonical = extracted
                    .canonical_url
                    .as_deref()
                    .and_then(|href| final_url.join(href).ok())
                    .filter(|c| crawler.in_scope(c))
                    .map(|mut c| {
                        c.set_fragment(None);
                        c
                    })
                    .unwrap_or(final_url);
                let uri = canonical.to_string();
                let text = text_hash(&extracted);
                if seen.uris.contains(&uri) || seen.texts.contains_key(&text) {
                    progress.add(|p| {
                        p.duplicates += 1;
                        p.done += 1;
                    });
                    continue;
                }
                seen.uris.insert(uri.clone());
                seen.texts.insert(text, uri.clone());
                fetched.uri = uri.clone();
                fetched.url = Some(uri.clone());
                match indexer.index_document(&found.id, &fetched, &extracted, progress).await {
                    Ok(outcome) => outcome.count(progress),
                    Err(err @ Error::Embedding(_)) => {
                        indexer.record_failure(&found.id, &uri, Some(&uri), &err.to_string()).await?;
                        progress.error(&uri, &err.to_string());
                    }
                    Err(other) => return Err(other),
                }
            }
        }
    }
    Ok(links)
}

fn is_html(fetched: &Fetched) -> bool {
    match fetched.content_type.as_deref() {
        Some(ct) => ct.to_ascii_lowercase().contains("html"),
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_loopback_and_link_local_addresses_are_recognised() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:10.0.0.1",
            "100.64.0.1",
        ] {
            assert!(is_private(private.parse().unwrap()), "{private} is not public");
        }
        for public in ["93.184.216.34", "1.1.1.1", "2606:4700::1111"] {
            assert!(!is_private(public.parse().unwrap()), "{public} is public");
        }
    }

    #[test]
    fn sitemaps_and_sitemap_indexes_parse() {
        let urlset = br#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>https://docs.example.test/a</loc><lastmod>2026-11-01</lastmod></url>
  <url><loc> https://docs.example.test/b </loc></url>
</urlset>"#;
        let parsed = parse_sitemap(urlset).unwrap();
        assert_eq!(
            parsed.urls,
            vec![
                ("https://docs.example.test/a".to_owned(), Some("2026-11-01".to_owned())),
                ("https://docs.example.test/b".to_owned(), None)
            ]
        );
        let index = br#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>https://docs.example.test/s1.xml.gz</loc></sitemap></sitemapindex>"#;
        assert_eq!(
            parse_sitemap(index).unwrap().sitemaps,
            vec!["https://docs.example.test/s1.xml.gz".to_owned()]
        );
        assert!(parse_sitemap(b"<urlset><url><loc>x</url>").is_err());
    }

    #[tokio::test]
    async fn loopback_targets_are_refused_unless_allowed() {
        let url = Url::parse("http://127.0.0.1:9/").unwrap();
        let refused = check_address(&url, false).await.unwrap_err();
        assert!(
            matches!(refused, IngestError::PrivateAddress(ref why) if why.contains("allow_private_addresses"))
        );
        check_address(&url, true).await.unwrap();
        let named = Url::parse("http://localhost:9/").unwrap();
        assert!(matches!(check_address(&named, false).await, Err(IngestError::PrivateAddress(_))));
    }
}
