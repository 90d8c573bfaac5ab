//! A source's start, as every surface begins it: created, and for a website
//! its first sync queued at once; found again by what it reads. The
//! console's Sources screen, `POST /admin/sources/` and the CLI call these,
//! so a new site starts crawling whichever of them created it. (The setup
//! wizard is the exception by design: its first sync is its own step.)

use super::jobs::{self, Job};
use crate::audit::Actor;
use crate::ingest::IngestError;
use crate::sources::connector::{FirstSync, WebhookProof};
use crate::sources::kinds::{git, upload, website};
use crate::sources::{self, NewSource, Source};
use crate::{Corpus, Error, Result};

/// Queues an indexing run of one source, or with `None` and `full` of every
/// source (an existing queued run of the same kind is returned instead).
/// Starting an index is when the profile comes to be: the first time, it is
/// built here from the persona chosen in the wizard (or the default one), as
/// an explicit step after the run is queued. Every surface that starts
/// indexing comes through here (or [`start_claimed`]); only the scheduler's
/// re-syncs, of sources indexed before, queue directly.
pub async fn start_run(lore: &Corpus, source_id: Option<&str>, full: bool, trigger: &str) -> Result<Job> {
    let job = jobs::enqueue(lore, source_id, full, trigger).await?;
    crate::profile::ensure_on_first_index(lore, &Actor::System).await?;
    Job::decode(job)
}

/// [`start_run`] for a process that runs the job itself (the CLI, the
/// benchmarks): the job is claimed by `owner` as soon as nothing it would
/// overlap runs (see [`jobs::claim_when_free`]), so no server worker takes
/// it meanwhile, and the first index makes the profile the same way.
pub async fn start_claimed(
    lore: &Corpus,
    source_id: Option<&str>,
    full: bool,
    trigger: &str,
    owner: &str,
) -> Result<entity::index_job::Model> {
    let job = jobs::enqueue(lore, source_id, full, trigger).await?;
    let Some(claimed) = jobs::claim_when_free(lore, &job.id, owner).await? else {
        let taken =
            if jobs::get(lore, &job.id).await?.status == jobs::CANCELLED { "cancelled" } else { "taken" };
        return Err(Error::Internal(format!(
            "the run was {taken} by another process first; follow it in the console"
        )));
    };
    crate::profile::ensure_on_first_index(lore, &Actor::System).await?;
    Ok(claimed)
}

/// A source just added, with the first sync queued for it (a website's).
#[derive(Clone, Debug)]
pub struct Added {
    pub source: Source,
    pub first_sync: Option<Job>,
}

/// Creates a source and, for a kind synced at once (a website, a table),
/// queues its first sync (`trigger` says who asked, as on every job). An
/// upload source waits for its files: each upload queues a run.
pub async fn add_source(lore: &Corpus, actor: &Actor, new: NewSource, trigger: &str) -> Result<Added> {
    let created = sources::create(lore, actor, new).await?;
    let first_sync = match created.kind.info().first_sync {
        FirstSync::AtOnce => Some(start_run(lore, Some(&created.id), false, trigger).await?),
        FirstSync::OnContent => None,
    };
    // Re-read: queuing moved its status.
    let source = sources::get(lore, &created.id).await?;
    Ok(Added { source, first_sync })
}

/// The website source that starts crawling at `url` (with no job queued
/// by this call), or else a new one (named `name`, or the URL's host) with
/// its first sync queued.
pub async fn website_at(
    lore: &Corpus,
    actor: &Actor,
    url: &str,
    name: Option<String>,
    trigger: &str,
) -> Result<Added> {
    for existing in sources::list(lore).await? {
        if existing.config.get::<website::WebsiteConfig>().is_some_and(|config| config.start_url == url) {
            return Ok(Added { source: existing, first_sync: None });
        }
    }
    let host = url::Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_owned));
    let new = NewSource {
        name: name.or(host).unwrap_or_else(|| url.to_owned()),
        kind: website::KEY.to_owned(),
        config: Some(serde_json::json!({ "start_url": url })),
        volatility: None,
        audience: None,
    };
    add_source(lore, actor, new, trigger).await
}

/// Queues a sync of source `id` for a forge's webhook call, when its
/// kind verifies the call's proof of the source's secret. A source that
/// does not exist is refused exactly as a wrong secret is, and a refused
/// call queues nothing.
pub async fn sync_by_webhook(lore: &Corpus, id: &str, proof: &WebhookProof<'_>) -> Result<Job> {
    let found = match sources::get(lore, id).await {
        Ok(found) => found,
        Err(Error::Ingest(IngestError::SourceNotFound(_))) => return Err(IngestError::WebhookRefused.into()),
        Err(other) => return Err(other),
    };
    if !found.kind.connector().verifies_webhook(&found.config, proof) {
        return Err(IngestError::WebhookRefused.into());
    }
    start_run(lore, Some(id), false, "webhook").await
}

/// Whether `target` names a git repository rather than a website or files:
/// a `git://` or `ssh://` URL, or a URL or path ending in `.git`.
pub fn is_repository_address(target: &str) -> bool {
    let target = target.trim().trim_end_matches('/');
    target.starts_with("git://") || target.starts_with("ssh://") || target.ends_with(".git")
}

/// The git source following the default branch of the repository at
/// `url`, created (its first sync queued) when none follows it yet.
pub async fn repository_at(
    lore: &Corpus,
    actor: &Actor,
    url: &str,
    name: Option<String>,
    trigger: &str,
) -> Result<Added> {
    for existing in sources::list(lore).await? {
        if existing.config.get::<git::GitConfig>().is_some_and(|config| config.url == url) {
            return Ok(Added { source: existing, first_sync: None });
        }
    }
    // `https://host/org/docs.git` is called `docs`.
    let repository = url.trim_end_matches('/').trim_end_matches(".git").rsplit(['/', ':']).next();
    let new = NewSource {
        name: name
            .or(repository.filter(|r| !r.is_empty()).map(str::to_owned))
            .unwrap_or_else(|| url.to_owned()),
        kind: git::KEY.to_owned(),
        config: Some(serde_json::json!({ "url": url })),
        volatility: None,
        audience: None,
    };
    add_source(lore, actor, new, trigger).await
}

/// The upload source named `name`, created when there is none. A source of
/// that name of another kind is refused: files must not land in a website.
pub async fn upload_source_named(lore: &Corpus, actor: &Actor, name: &str) -> Result<Source> {
    match sources::find(lore, name).await {
        Ok(found) if found.kind.info().takes_files => Ok(found),
        Ok(found) => Err(crate::Error::InvalidInput(format!(
            "a source named {name:?} exists and is a {} source, not an upload source; choose another name",
            found.kind.key()
        ))),
        Err(crate::Error::Ingest(IngestError::SourceNotFound(_))) => {
            let new =
                NewSource { name: name.to_owned(), kind: upload::KEY.to_owned(), ..NewSource::default() };
            sources::create(lore, actor, new).await
        }
        Err(err) => Err(err),
    }
}

/// A source as every surface lists it: the record, its latest run and
/// whether its content is fresh (`None`: never synced, or never goes stale).
#[derive(Clone, Debug)]
pub struct Overview {
    pub source: Source,
    pub latest_job: Option<Job>,
    pub fresh: Option<bool>,
}

/// The [`Overview`] of `source`.
pub async fn overview(lore: &Corpus, source: Source) -> Result<Overview> {
    let latest_job = jobs::recent(lore, Some(&source.id), 1).await?.into_iter().next();
    let fresh = sources::is_fresh(&source, chrono::Utc::now());
    Ok(Overview { source, latest_job, fresh })
}

/// Every source's [`Overview`], in creation order.
pub async fn overviews(lore: &Corpus) -> Result<Vec<Overview>> {
    let mut all = Vec::new();
    for source in sources::list(lore).await? {
        all.push(overview(lore, source).await?);
    }
    Ok(all)
}
