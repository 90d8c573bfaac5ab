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
//! an address that is not public by the IANA special-purpose registries (see
//! [`super::address`]): names are resolved through a resolver that drops such
//! addresses, and every URL (IP literal or name) is checked before each
//! request. The environment's `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY` are
//! ignored, since through a proxy the connect-time check would only ever see
//! the proxy. An operator's explicit `ingest.proxy` is used instead; the
//! proxy then resolves the targets, so Lore resolves and checks every target
//! itself before each request, and follows redirects itself to check each hop.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use entity::document;
use futures::StreamExt;
use globset::{Glob, GlobSet, GlobSetBuilder};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use url::Url;

use super::address::{self, Reason};
use super::jobs::ProgressHandle;
use super::{text_hash, Fetched, Indexer, IngestError, Reading};
use crate::extract;
use crate::settings::Settings;
use crate::sources::kinds::website::{validate, Discovery, WebsiteConfig};
use crate::sources::Source;
use crate::Result;

/// The crawler's name in User-Agent and for robots.txt rules.
pub const AGENT: &str = "LoreBot";
/// Pages larger than this are skipped.
const MAX_PAGE_BYTES: usize = 10 * 1024 * 1024;
/// Sitemaps (after decompression) larger than this are refused.
const MAX_SITEMAP_BYTES: usize = 50 * 1024 * 1024;
const MAX_SITEMAP_DEPTH: usize = 3;
const MAX_REDIRECTS: usize = 10;
/// robots.txt past this is read no further (Google reads 500 KiB).
const MAX_ROBOTS_BYTES: usize = 500 * 1024;

/// Whether `ip` is not a public address (private, loopback, link-local,
/// documentation, multicast, an IPv6 form of such an IPv4 address, ...).
pub fn is_private(ip: IpAddr) -> bool {
    !address::is_public(ip)
}

/// The refusal for `host`, which is or resolves to `ip`.
fn refusal(host: &str, ip: IpAddr, reason: Reason) -> IngestError {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let what = if bare.parse::<IpAddr>().is_ok_and(|literal| literal == ip) {
        format!("{host} is not a public address ({reason})")
    } else {
        format!("{host} resolves to {ip}, which is not a public address ({reason})")
    };
    IngestError::PrivateAddress(format!(
        "{what}; Lore does not crawl private, loopback, link-local or other non-public addresses unless ingest.allow_private_addresses is set"
    ))
}

/// Refuses `ip` for `host` when it is not public.
fn judge(host: &str, ip: IpAddr) -> Result<(), IngestError> {
    match address::classify(ip) {
        Some(reason) => Err(refusal(host, ip, reason)),
        None => Ok(()),
    }
}

/// The address of a URL whose host is an IP literal.
fn literal_address(url: &Url) -> Option<IpAddr> {
    match url.host()? {
        url::Host::Ipv4(v4) => Some(IpAddr::V4(v4)),
        url::Host::Ipv6(v6) => Some(IpAddr::V6(v6)),
        // Hosts of non-special schemes are not normalised, so a literal can hide here.
        url::Host::Domain(name) => name.trim_start_matches('[').trim_end_matches(']').parse().ok(),
    }
}

/// Refuses a URL whose host is, or resolves to, a non-public address.
pub async fn check_address(url: &Url, allow_private: bool) -> Result<(), IngestError> {
    if allow_private {
        return Ok(());
    }
    let host = url.host_str().ok_or_else(|| IngestError::InvalidSource(format!("{url} has no host")))?;
    if let Some(ip) = literal_address(url) {
        return judge(host, ip);
    }
    let port = url.port_or_known_default().unwrap_or(80);
    let addresses = tokio::net::lookup_host((host, port))
        .await
        .map_err(|err| IngestError::Fetch(format!("cannot resolve {host}: {err}")))?;
    for found in addresses {
        judge(host, found.ip())?;
    }
    Ok(())
}

/// DNS that never hands out a non-public address: a name with any such
/// address is refused as a whole, so a mixed answer cannot slip one through.
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
            for address in &found {
                judge(&host, address.ip()).map_err(|refused| Box::new(refused) as BoxError)?;
            }
            Ok(Box::new(found.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The operator's `ingest.proxy`, checked: an http(s) URL with a host.
fn configured_proxy(raw: &str) -> Result<reqwest::Proxy, IngestError> {
    // The value may carry credentials, so the messages do not repeat it.
    let invalid =
        |why: String| IngestError::InvalidSource(format!("ingest.proxy is not a usable proxy URL: {why}"));
    let url = Url::parse(raw.trim()).map_err(|err| invalid(err.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(format!("the scheme must be http or https, not {}", url.scheme())));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("it has no host".into()));
    }
    reqwest::Proxy::all(url).map_err(|err| invalid(err.to_string()))
}

/// One small document fetched from an address a caller named (a client ID
/// metadata document, say), under the crawler's address guard.
#[derive(Debug)]
pub struct SmallDocument {
    pub status: u16,
    /// How long it may be kept, from `Cache-Control` (`no-store` and
    /// `no-cache` are zero); `None` when the response does not say.
    pub max_age: Option<Duration>,
    pub body: Vec<u8>,
}

/// GETs `url` once: its address checked as a crawl's are (the resolver
/// refuses non-public addresses unless `ingest.allow_private_addresses` is
/// set), no redirect followed (a 3xx comes back as its status), within
/// `timeout`, and refused as soon as the body passes `limit` bytes.
pub async fn fetch_small(
    settings: &Settings,
    url: &Url,
    limit: usize,
    timeout: Duration,
) -> Result<SmallDocument, IngestError> {
    check_address(url, settings.ingest.allow_private_addresses).await?;
    let client = guarded_client(settings, reqwest::redirect::Policy::none(), timeout, timeout)?;
    let response = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|err| IngestError::Fetch(describe(&err)))?;
    let status = response.status().as_u16();
    let max_age = response
        .headers()
        .get(reqwest::header::CACHE_CONTROL)
        .and_then(|value| value.to_str().ok())
        .and_then(cache_max_age);
    if response.content_length().is_some_and(|length| length > limit as u64) {
        return Err(IngestError::Fetch(format!("the document is larger than {limit} bytes")));
    }
    let body = Crawler::body(response, limit)
        .await
        .map_err(|why| IngestError::Fetch(format!("the document is {why}")))?;
    Ok(SmallDocument { status, max_age, body })
}

/// How long a `Cache-Control` header lets a response be kept.
fn cache_max_age(value: &str) -> Option<Duration> {
    let mut max_age = None;
    for directive in value.split(',').map(str::trim) {
        let lower = directive.to_ascii_lowercase();
        if lower == "no-store" || lower == "no-cache" {
            return Some(Duration::ZERO);
        }
        if let Some(seconds) = lower.strip_prefix("max-age=") {
            max_age = seconds.trim_matches('"').parse().ok().map(Duration::from_secs);
        }
    }
    max_age
}

/// The client every fetch of a named address goes through: the
/// environment's proxies ignored (`no_proxy` first: they would carry every
/// request past the resolver's check), names resolved to public addresses
/// only unless `ingest.allow_private_addresses` is set, `ingest.ca_file`'s
/// roots trusted, and `ingest.proxy` used when set (the proxy then resolves
/// the targets, so the callers check each one before its request).
fn guarded_client(
    settings: &Settings,
    redirects: reqwest::redirect::Policy,
    connect: Duration,
    total: Duration,
) -> Result<reqwest::Client, IngestError> {
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .user_agent(format!("{AGENT}/{} (+{})", env!("CARGO_PKG_VERSION"), settings.base_url()))
        .redirect(redirects)
        .connect_timeout(connect)
        .timeout(total);
    for root in extra_roots(settings)? {
        builder = builder.add_root_certificate(root);
    }
    match settings.ingest.proxy.as_ref() {
        Some(proxy) => builder = builder.proxy(configured_proxy(proxy.expose())?),
        None if !settings.ingest.allow_private_addresses => {
            builder = builder.dns_resolver(Arc::new(PublicOnlyResolver))
        }
        None => {}
    }
    builder.build().map_err(|err| IngestError::Fetch(format!("HTTP client: {err}")))
}

/// The further roots of `ingest.ca_file`, which every fetch of a named
/// address trusts beside the public ones.
fn extra_roots(settings: &Settings) -> Result<Vec<reqwest::Certificate>, IngestError> {
    let Some(path) = &settings.ingest.ca_file else { return Ok(Vec::new()) };
    let unusable = |why: String| {
        IngestError::InvalidSource(format!(
            "ingest.ca_file {} is not a usable PEM file: {why}",
            path.display()
        ))
    };
    let pem = std::fs::read(path).map_err(|err| unusable(err.to_string()))?;
    reqwest::Certificate::from_pem_bundle(&pem).map_err(|err| unusable(err.to_string()))
}

/// Same host and port as the start URL.
fn same_site(url: &Url, start: &Url) -> bool {
    url.host_str() == start.host_str() && url.port_or_known_default() == start.port_or_known_default()
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
    /// Redirects are followed by [`Crawler::get`] rather than by the client,
    /// so each hop is checked: set when a proxy resolves the targets and the
    /// resolver's check never runs.
    follows_redirects_itself: bool,
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
        let follows_redirects_itself = settings.ingest.proxy.is_some();
        let policy = if follows_redirects_itself {
            reqwest::redirect::Policy::none()
        } else {
            let scope = start.clone();
            reqwest::redirect::Policy::custom(move |attempt| {
                let next = attempt.url();
                // IP literals never reach the resolver, so they are judged here.
                let refused = literal_address(next)
                    .filter(|_| !allow_private)
                    .and_then(|ip| judge(next.host_str().unwrap_or_default(), ip).err());
                if let Some(refused) = refused {
                    attempt.error(refused)
                } else if attempt.previous().len() >= MAX_REDIRECTS {
                    attempt.error("too many redirects")
                } else if !same_site(next, &scope) {
                    // Out of scope: stop here; the page is skipped.
                    attempt.stop()
                } else {
                    attempt.follow()
                }
            })
        };
        let client = guarded_client(settings, policy, Duration::from_secs(10), Duration::from_secs(30))?;
        Ok(Self {
            include: glob_set(&config.include)?,
            exclude: glob_set(&config.exclude)?,
            client,
            start,
            config,
            robots: None,
            allow_private,
            follows_redirects_itself,
            concurrency: settings.ingest.crawl_concurrency.max(1),
            delay: None,
        })
    }

    /// Same host and port as the start URL, and within the patterns.
    pub fn in_scope(&self, url: &Url) -> bool {
        if !matches!(url.scheme(), "http" | "https") || !same_site(url, &self.start) {
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
        let Ok(response) = self.get(&robots_url, None).await else { return Vec::new() };
        if !response.status().is_success() {
            return Vec::new();
        }
        let Ok(body) = Self::body_prefix(response, MAX_ROBOTS_BYTES).await else { return Vec::new() };
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

    /// GETs `url` after checking its address. With a proxy, redirects within
    /// the site are followed here, each hop checked the same way; a redirect
    /// out of the site is returned as it is (the page is skipped).
    async fn get(
        &self,
        url: &Url,
        validators: Option<&document::Model>,
    ) -> Result<reqwest::Response, String> {
        if let Some(delay) = self.delay {
            tokio::time::sleep(delay).await;
        }
        let mut current = url.clone();
        let mut hops = 0;
        loop {
            check_address(&current, self.allow_private).await.map_err(|err| err.to_string())?;
            let mut request = self.client.get(current.clone());
            if let Some(doc) = validators {
                if let Some(etag) = &doc.etag {
                    request = request.header(reqwest::header::IF_NONE_MATCH, etag);
                }
                if let Some(modified) = &doc.last_modified {
                    request = request.header(reqwest::header::IF_MODIFIED_SINCE, modified);
                }
            }
            let response = request.send().await.map_err(|err| describe(&err))?;
            if !self.follows_redirects_itself {
                return Ok(response);
            }
            let Some(next) = redirect_target(&response, &current).filter(|next| same_site(next, &self.start))
            else {
                return Ok(response);
            };
            if hops >= MAX_REDIRECTS {
                return Err("too many redirects".into());
            }
            hops += 1;
            current = next;
        }
    }

    /// Reads at most the first `limit` bytes of a body.
    async fn body_prefix(response: reqwest::Response, limit: usize) -> Result<Vec<u8>, String> {
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(piece) = stream.next().await {
            let piece = piece.map_err(|err| describe(&err))?;
            let room = limit - body.len();
            body.extend_from_slice(&piece[..piece.len().min(room)]);
            if body.len() == limit {
                break;
            }
        }
        Ok(body)
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
                    view: None,
                    section_anchors: false,
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
            let parsed = lore_extract::parse_sitemap(&body)
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

/// Where a redirect response points, resolved against the URL that gave it
/// (the statuses reqwest itself follows; a 304 is not a redirect).
fn redirect_target(response: &reqwest::Response, from: &Url) -> Option<Url> {
    use reqwest::StatusCode;
    let status = response.status();
    let follows = [
        StatusCode::MOVED_PERMANENTLY,
        StatusCode::FOUND,
        StatusCode::SEE_OTHER,
        StatusCode::TEMPORARY_REDIRECT,
        StatusCode::PERMANENT_REDIRECT,
    ];
    if !follows.contains(&status) {
        return None;
    }
    let location = response.headers().get(reqwest::header::LOCATION)?.to_str().ok()?;
    from.join(location.trim()).ok().filter(|next| matches!(next.scheme(), "http" | "https"))
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

/// Links of an HTML page, absolute, without fragments (parsed within the
/// extraction limits: a page past them has no links to follow).
fn links_of(html: &[u8], base: &Url) -> Vec<Url> {
    lore_extract::links(html, &lore_extract::Limits::default())
        .iter()
        .filter_map(|href| base.join(href).ok())
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
    found: &Source,
    config: &WebsiteConfig,
    progress: &ProgressHandle,
    cancel: tokio::sync::watch::Receiver<bool>,
) -> Result<()> {
    validate(config)?;
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
    found: &Source,
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
    let mut pending = Pending::default();
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
                    // A parse, bounded but CPU work all the same: off the
                    // async workers, which serve answers meanwhile.
                    let (bytes, base) = (fetched.bytes.clone(), final_url.clone());
                    links.extend(
                        tokio::task::spawn_blocking(move || links_of(&bytes, &base))
                            .await
                            .unwrap_or_default(),
                    );
                }
                let extracted = match indexer.read(&found.id, &fetched, final_url.as_str()).await? {
                    Reading::Quarantined(reason) => {
                        progress.error(url.as_str(), &reason);
                        continue;
                    }
                    Reading::Extracted(extracted) => extracted,
                };
                let extracted = match extracted {
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
                fetched.url = Some(uri);
                if pending.push(*fetched, extracted) {
                    pending.index(indexer, &found.id, progress).await?;
                }
            }
        }
    }
    // What was read before a cancel is indexed too, as it was page by page.
    pending.index(indexer, &found.id, progress).await?;
    Ok(links)
}

/// Pages read and extracted, waiting to be indexed together (one embedding
/// call, one commit of the chunk store; see [`super::DOCUMENTS_PER_WRITE`]).
#[derive(Default)]
struct Pending {
    pages: Vec<(Fetched, extract::Extracted)>,
    since: Option<Instant>,
}

impl Pending {
    /// Once the first page waiting is this old, the next page read makes
    /// the batch due: a slow or polite crawl still shows its pages in the
    /// progress, and in answers, as it goes.
    const AT_MOST: Duration = Duration::from_secs(2);

    /// Adds a page; says whether the batch is due.
    fn push(&mut self, fetched: Fetched, extracted: extract::Extracted) -> bool {
        self.pages.push((fetched, extracted));
        let since = *self.since.get_or_insert_with(Instant::now);
        self.pages.len() >= super::DOCUMENTS_PER_WRITE || since.elapsed() >= Self::AT_MOST
    }

    /// Indexes what waits. A page the embedder refuses fails alone.
    async fn index(&mut self, indexer: &Indexer, source_id: &str, progress: &ProgressHandle) -> Result<()> {
        self.since = None;
        if self.pages.is_empty() {
            return Ok(());
        }
        let pages = std::mem::take(&mut self.pages);
        indexer.index_batch(source_id, &pages, progress).await
    }
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
    use crate::sources::connector::Connector;
    use crate::sources::kinds::website::Website;

    #[test]
    fn read_pages_wait_for_a_full_batch_or_two_seconds() {
        let page = || {
            let extracted = extract::Extracted { title: None, canonical_url: None, sections: Vec::new() };
            (Fetched::default(), extracted)
        };
        let mut pending = Pending::default();
        for _ in 1..crate::ingest::DOCUMENTS_PER_WRITE {
            let (fetched, extracted) = page();
            assert!(!pending.push(fetched, extracted));
        }
        let (fetched, extracted) = page();
        assert!(pending.push(fetched, extracted), "a full batch is due");

        let mut pending = Pending::default();
        let (fetched, extracted) = page();
        assert!(!pending.push(fetched, extracted));
        pending.since = Instant::now().checked_sub(Pending::AT_MOST);
        let (fetched, extracted) = page();
        assert!(pending.push(fetched, extracted), "the first page has waited long enough");
    }

    #[test]
    fn cache_control_says_how_long_a_document_is_kept() {
        assert_eq!(cache_max_age("public, max-age=3600"), Some(Duration::from_secs(3600)));
        assert_eq!(cache_max_age("max-age=60, no-cache"), Some(Duration::ZERO));
        assert_eq!(cache_max_age("no-store"), Some(Duration::ZERO));
        assert_eq!(cache_max_age("public"), None);
        assert_eq!(cache_max_age("max-age=soon"), None);
    }

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

    #[tokio::test]
    async fn non_public_addresses_from_the_report_are_refused_with_the_reason() {
        for (url, why) in [
            ("http://[64:ff9b::a9fe:a9fe]/", "the NAT64 form of 169.254.169.254, link-local"),
            ("http://[2002:7f00:1::]/", "the 6to4 form of 127.0.0.1, loopback"),
            ("http://[::127.0.0.1]/", "the IPv4-compatible form of 127.0.0.1, loopback"),
            ("http://[fec0::1]/", "site-local"),
            ("http://224.0.0.1/", "multicast"),
            ("http://198.18.0.1/", "benchmarking"),
            ("http://240.0.0.1/", "reserved"),
            ("http://[::ffff:169.254.169.254]/", "the IPv4-mapped form of 169.254.169.254, link-local"),
            ("http://[fe80::1]:8080/", "link-local"),
            ("http://[2001:db8::1]/", "documentation"),
            ("http://[2001::1]/", "Teredo"),
            ("http://255.255.255.255/", "limited broadcast"),
            // The URL parser reads these as IPv4 literals too.
            ("http://2130706433/", "loopback"),
            ("http://0x7f.1/", "loopback"),
        ] {
            let url = Url::parse(url).unwrap();
            match check_address(&url, false).await {
                Err(IngestError::PrivateAddress(message)) => {
                    assert!(message.contains(why), "{url}: {message}");
                    assert!(message.contains(url.host_str().unwrap()), "{url}: {message}");
                    assert!(message.contains("ingest.allow_private_addresses"), "{url}: {message}");
                }
                other => panic!("{url} was not refused: {other:?}"),
            }
            check_address(&url, true).await.unwrap();
        }
        for public in ["http://93.184.216.34/", "http://[2606:4700::1111]/", "http://[64:ff9b::5db8:d822]/"] {
            check_address(&Url::parse(public).unwrap(), false).await.unwrap();
        }
    }

    /// A tiny HTTP server on 127.0.0.1 (acting as a proxy or a site) that
    /// records each request line and answers with `answer(request line)`,
    /// closing the connection after each response.
    async fn serve(answer: fn(&str) -> String) -> (SocketAddr, Arc<std::sync::Mutex<Vec<String>>>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let log = log.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let text = String::from_utf8_lossy(&head);
                    let line = text.lines().next().unwrap_or_default().to_owned();
                    let response = answer(&line);
                    log.lock().unwrap().push(line);
                    let _ = stream.write_all(response.as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        (address, seen)
    }

    fn response(status: &str, headers: &str, body: &str) -> String {
        format!(
            "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    }

    fn website(start_url: &str) -> WebsiteConfig {
        Website.parse(Some(serde_json::json!({ "start_url": start_url }))).unwrap()
    }

    #[tokio::test]
    async fn an_unusable_proxy_setting_is_a_clear_error_at_crawl_start() {
        for bad in ["not a proxy url", "socks5://127.0.0.1:1080", "file:///etc/passwd", "http://"] {
            let mut settings = Settings::default();
            settings.ingest.proxy = Some(crate::settings::Secret::new(bad));
            match Crawler::new(&settings, website("https://docs.example.test/")) {
                Err(IngestError::InvalidSource(message)) => {
                    assert!(message.contains("ingest.proxy"), "{bad}: {message}");
                }
                Err(other) => panic!("{bad}: {other:?}"),
                Ok(_) => panic!("{bad} was accepted as a proxy"),
            }
        }
        let mut settings = Settings::default();
        settings.ingest.proxy = Some(crate::settings::Secret::new("http://user:secret@proxy.internal:3128"));
        assert!(Crawler::new(&settings, website("https://docs.example.test/")).is_ok());
    }

    #[tokio::test]
    async fn through_a_proxy_every_target_and_redirect_is_still_checked() {
        let (proxy, requests) = serve(|line| match line {
            "GET http://93.184.216.34/docs/ HTTP/1.1" => {
                response("301 Moved", "Location: /docs/moved\r\n", "")
            }
            "GET http://93.184.216.34/docs/moved HTTP/1.1" => response("200 OK", "", "moved here"),
            "GET http://93.184.216.34/away HTTP/1.1" => {
                response("302 Found", "Location: http://169.254.169.254/latest/\r\n", "")
            }
            "GET http://93.184.216.34/loop HTTP/1.1" => response("302 Found", "Location: /loop\r\n", ""),
            _ => response("404 Not Found", "", ""),
        })
        .await;
        let mut settings = Settings::default();
        settings.ingest.allow_private_addresses = false;
        settings.ingest.proxy = Some(crate::settings::Secret::new(format!("http://{proxy}")));
        let crawler = Crawler::new(&settings, website("http://93.184.216.34/docs/")).unwrap();
        assert!(crawler.follows_redirects_itself);

        // Refused before anything reaches the proxy, names resolved by Lore itself.
        for (target, why) in [
            ("http://169.254.169.254/latest/meta-data/", "link-local"),
            ("http://[64:ff9b::a9fe:a9fe]/", "the NAT64 form of 169.254.169.254"),
            ("http://localhost/", "loopback"),
            ("http://127.0.0.1/robots.txt", "loopback"),
        ] {
            let refused = crawler.get(&Url::parse(target).unwrap(), None).await.unwrap_err();
            assert!(
                refused.contains(why) && refused.contains("allow_private_addresses"),
                "{target}: {refused}"
            );
        }
        assert!(requests.lock().unwrap().is_empty(), "{:?}", requests.lock().unwrap());

        // A redirect within the site is followed through the proxy, hop by hop.
        let page = crawler.get(&Url::parse("http://93.184.216.34/docs/").unwrap(), None).await.unwrap();
        assert_eq!(page.url().as_str(), "http://93.184.216.34/docs/moved");
        assert_eq!(page.text().await.unwrap(), "moved here");
        // A redirect out of the site is not followed (the page is skipped).
        let away = crawler.get(&Url::parse("http://93.184.216.34/away").unwrap(), None).await.unwrap();
        assert_eq!(away.status(), reqwest::StatusCode::FOUND);
        let looping = crawler.get(&Url::parse("http://93.184.216.34/loop").unwrap(), None).await.unwrap_err();
        assert!(looping.contains("too many redirects"), "{looping}");
        let seen = requests.lock().unwrap().clone();
        assert_eq!(
            seen[..3],
            [
                "GET http://93.184.216.34/docs/ HTTP/1.1",
                "GET http://93.184.216.34/docs/moved HTTP/1.1",
                "GET http://93.184.216.34/away HTTP/1.1",
            ]
        );
        assert_eq!(seen.len(), 3 + MAX_REDIRECTS + 1, "{seen:?}");
    }

    /// Set in the child process of the test below.
    const PROXY_CHILD: &str = "LORE_TEST_PROXY_ENV_CHILD";

    /// The environment's proxies are ignored. Setting them in this process
    /// would race every other test that builds an HTTP client, so the test
    /// runs itself again as a child process with them set there.
    #[tokio::test]
    async fn the_crawler_client_ignores_the_proxy_environment() {
        if std::env::var_os(PROXY_CHILD).is_some() {
            let (site, _) = serve(|_| response("200 OK", "", "direct")).await;
            let target = Url::parse(&format!("http://{site}/")).unwrap();
            // The environment's proxy is live here: a default client goes through it.
            let plain = reqwest::Client::new().get(target.clone()).send().await.unwrap();
            assert_eq!(plain.text().await.unwrap(), "via the proxy");
            let mut settings = Settings::default();
            settings.ingest.allow_private_addresses = true;
            let crawler = Crawler::new(&settings, website(target.as_str())).unwrap();
            let page = crawler.get(&target, None).await.unwrap();
            assert_eq!(page.text().await.unwrap(), "direct");
            return;
        }
        let (proxy, _) = serve(|_| response("200 OK", "", "via the proxy")).await;
        let name = format!(
            "{}::the_crawler_client_ignores_the_proxy_environment",
            module_path!().split_once("::").map_or("", |(_, path)| path)
        );
        let mut child = std::process::Command::new(std::env::current_exe().unwrap());
        child.args([name.as_str(), "--exact", "--nocapture"]).env(PROXY_CHILD, "1");
        for key in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"] {
            child.env(key, format!("http://{proxy}"));
        }
        // Either would switch the environment's proxies off for the control request.
        for key in ["NO_PROXY", "no_proxy", "REQUEST_METHOD"] {
            child.env_remove(key);
        }
        let output = tokio::task::spawn_blocking(move || child.output()).await.unwrap().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("1 passed"),
            "the child run failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
