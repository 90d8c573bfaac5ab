//! Git repositories as sources, through the `git` command: each git source
//! keeps a bare mirror under `{data_dir}/git/{source}`, fetched from its
//! remote by URL (nothing about the remote, and no credential, is written
//! into the mirror's configuration), and read from there.
//!
//! A sync fetches the branch, then compares the commit it last indexed
//! (`source.sync_state`, recorded only when a sync completes) with the new
//! head: when the head descends from it, only the files `git diff` names as
//! added, modified, renamed or deleted are read or removed; otherwise (the
//! first sync, a force-push that rewrote history, a mirror that was lost)
//! every file of the head is read and compared by content hash, so nothing
//! unchanged is embedded again and files gone from the tree are removed.
//! The indexed commit is kept reachable in the mirror (`refs/lore/indexed`)
//! so a force-push cannot take the comparison's base away.
//!
//! Credentials come from the environment (a token, sent as an HTTP header
//! through git's environment configuration) or a deploy key file (for
//! `ssh://`); neither reaches the command line, a log or an error.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use tokio::process::Command;

use super::jobs::ProgressHandle;
use super::{Fetched, Indexer, IngestError, Reading};
use crate::extract;
use crate::sources::kinds::git::{GitConfig, Location};
use crate::sources::Source;
use crate::{Corpus, Error, Result};

/// How long one fetch or `ls-remote` may take before it is abandoned.
const NETWORK_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a question to the remote at creation may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a command on the mirror alone may take.
const LOCAL_TIMEOUT: Duration = Duration::from_secs(120);
/// The ref that holds the fetched head, and the one that keeps the indexed
/// commit reachable.
const FETCHED_REF: &str = "refs/lore/fetched";
const INDEXED_REF: &str = "refs/lore/indexed";

/// What went wrong with a repository; each is a stable error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GitProblem {
    /// The remote could not be reached (no such host, refused, timed out).
    Unreachable,
    /// Something answered, but holds no git repository there.
    NotARepository,
    /// The repository has no such branch.
    BranchNotFound,
    /// The remote refused the credentials (or asked for some).
    AuthenticationFailed,
    /// The repository is larger than the source allows.
    TooLarge,
}

/// Where a git source's last completed sync left off
/// (`source.sync_state`), and what it changed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitState {
    /// The commit indexed.
    pub commit: String,
    pub branch: String,
    /// How the sync compared: `diff` (from the commit before), `full`
    /// (every file by content hash), `unchanged` (the same commit).
    pub compared: String,
    /// Files read again because they were added, modified or renamed (for
    /// `full`: every file read).
    pub changed: u64,
    /// Files removed with their chunks.
    pub removed: u64,
    /// Files of the tree the source takes, and the others it skipped.
    pub files: u64,
    pub skipped: u64,
}

/// The mirror of a source.
fn mirror_dir(lore: &Corpus, source_id: &str) -> PathBuf {
    lore.settings.data_dir.join("git").join(source_id)
}

/// Removes a source's mirror, if it has one (the source was deleted).
pub async fn remove_mirror(lore: &Corpus, source_id: &str) -> Result<()> {
    let dir = mirror_dir(lore, source_id);
    match tokio::fs::remove_dir_all(&dir).await {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(Error::Io { context: dir.display().to_string(), source }),
    }
}

/// The remote as git is asked for it: its address, and the environment
/// that carries its credentials.
pub struct Remote {
    url: String,
    env: Vec<(String, String)>,
}

impl Remote {
    /// The remote of `config`, its token read from the environment now.
    pub fn of(config: &GitConfig) -> Result<Remote, IngestError> {
        let url = match config.location()? {
            Location::Path(path) => path.display().to_string(),
            Location::Url(url) => url.to_string(),
        };
        // Only the transports a source may use: never `ext::`, which runs
        // a command, whatever a URL says.
        let mut env = vec![
            ("GIT_TERMINAL_PROMPT".to_owned(), "0".to_owned()),
            ("GIT_ALLOW_PROTOCOL".to_owned(), "http:https:ssh:git:file".to_owned()),
            ("GIT_CONFIG_NOSYSTEM".to_owned(), "1".to_owned()),
        ];
        let mut settings: Vec<(&str, String)> = vec![("credential.helper", String::new())];
        if let Some(name) = &config.token_env {
            let token = std::env::var(name).map_err(|_| {
                IngestError::Git(
                    GitProblem::AuthenticationFailed,
                    format!("the token's environment variable {name} is not set"),
                )
            })?;
            let basic = base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"));
            settings.push(("http.extraHeader", format!("Authorization: Basic {basic}")));
        }
        env.push(("GIT_CONFIG_COUNT".to_owned(), settings.len().to_string()));
        for (i, (key, value)) in settings.into_iter().enumerate() {
            env.push((format!("GIT_CONFIG_KEY_{i}"), key.to_owned()));
            env.push((format!("GIT_CONFIG_VALUE_{i}"), value));
        }
        let key = config.deploy_key_file.as_deref().map(|path| format!(" -i '{path}' -o IdentitiesOnly=yes"));
        env.push((
            "GIT_SSH_COMMAND".to_owned(),
            format!("ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new{}", key.unwrap_or_default()),
        ));
        Ok(Remote { url, env })
    }

    /// The branch the remote's HEAD names (its default branch).
    pub async fn default_branch(&self) -> Result<String, IngestError> {
        let out =
            run(None, &["ls-remote", "--symref", "--", &self.url, "HEAD"], Some(self), PROBE_TIMEOUT).await?;
        String::from_utf8_lossy(&out)
            .lines()
            .find_map(|line| {
                line.strip_prefix("ref: refs/heads/")?.split_once('\t').map(|(b, _)| b.to_owned())
            })
            .ok_or_else(|| {
                IngestError::Git(GitProblem::BranchNotFound, "the repository names no default branch".into())
            })
    }

    /// Checks that the remote answers, as a repository, with `branch`.
    pub async fn probe(&self, branch: Option<&str>) -> Result<(), IngestError> {
        let branch = match branch {
            Some(branch) => branch.to_owned(),
            None => self.default_branch().await?,
        };
        let wanted = format!("refs/heads/{branch}");
        let out =
            run(None, &["ls-remote", "--heads", "--", &self.url, &wanted], Some(self), PROBE_TIMEOUT).await?;
        if out.is_empty() {
            return Err(no_branch(&branch));
        }
        Ok(())
    }
}

fn no_branch(branch: &str) -> IngestError {
    IngestError::Git(GitProblem::BranchNotFound, format!("the repository has no branch {branch:?}"))
}

/// Runs `git` (on the mirror `dir`, when given) and returns its output.
/// A failure is classified by what git said; the message never holds the
/// remote's credentials (they are not in the arguments).
async fn run(
    dir: Option<&Path>,
    args: &[&str],
    remote: Option<&Remote>,
    timeout: Duration,
) -> Result<Vec<u8>, IngestError> {
    let mut command = Command::new("git");
    if let Some(dir) = dir {
        command.arg("--git-dir").arg(dir);
    }
    command.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    if let Some(remote) = remote {
        command.envs(remote.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    }
    let output = match tokio::time::timeout(timeout, command.output()).await {
        Ok(Ok(output)) => output,
        Ok(Err(err)) => return Err(IngestError::Fetch(format!("git could not be run: {err}"))),
        Err(_) => {
            return Err(IngestError::Git(
                GitProblem::Unreachable,
                format!("git {} took longer than {} s", args[0], timeout.as_secs()),
            ))
        }
    };
    if output.status.success() {
        return Ok(output.stdout);
    }
    let said = String::from_utf8_lossy(&output.stderr);
    Err(classify(args[0], &said))
}

/// What a failed git command's error output means.
fn classify(command: &str, said: &str) -> IngestError {
    let lower = said.to_lowercase();
    let first = said.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or("no message");
    let problem = if lower.contains("authentication failed")
        || lower.contains("could not read username")
        || lower.contains("could not read password")
        || lower.contains("permission denied (publickey")
        || lower.contains("terminal prompts disabled")
        || lower.contains("returned error: 401")
        || lower.contains("returned error: 403")
    {
        Some(GitProblem::AuthenticationFailed)
    } else if lower.contains("couldn't find remote ref") {
        Some(GitProblem::BranchNotFound)
    } else if lower.contains("could not resolve host")
        || lower.contains("connection refused")
        || lower.contains("unable to connect")
        || lower.contains("timed out")
        || lower.contains("network is unreachable")
        || lower.contains("could not connect")
    {
        Some(GitProblem::Unreachable)
    } else if lower.contains("not a git repository")
        || lower.contains("does not appear to be a git repository")
        || lower.contains("not found")
        || lower.contains("returned error: 404")
        || lower.contains("no such file or directory")
        || lower.contains("not valid: is this a git repository")
        || lower.contains("repository not exported")
    {
        Some(GitProblem::NotARepository)
    } else {
        None
    };
    let what = match problem {
        Some(GitProblem::AuthenticationFailed) => "the repository refused the credentials",
        Some(GitProblem::BranchNotFound) => "the repository has no such branch",
        Some(GitProblem::Unreachable) => "the repository could not be reached",
        Some(GitProblem::NotARepository) => "there is no git repository at that address",
        Some(GitProblem::TooLarge) | None => "git failed",
    };
    let message = format!("{what} (git {command}: {first})");
    match problem {
        Some(problem) => IngestError::Git(problem, message),
        None => IngestError::Fetch(message),
    }
}

/// A file of a commit's tree.
#[derive(Clone, Debug)]
struct Entry {
    oid: String,
    size: u64,
}

/// One change `git diff` names between two commits.
#[derive(Debug, PartialEq, Eq)]
enum Change {
    /// Added, modified or of another type now: read it.
    Write(String),
    Delete(String),
    Rename {
        from: String,
        to: String,
    },
}

/// The bare mirror of one source.
struct Mirror {
    dir: PathBuf,
}

impl Mirror {
    async fn open(lore: &Corpus, source_id: &str) -> Result<Mirror> {
        let dir = mirror_dir(lore, source_id);
        if !tokio::fs::try_exists(dir.join("HEAD")).await.unwrap_or(false) {
            let parent = dir.parent().unwrap_or(&dir).to_owned();
            tokio::fs::create_dir_all(&parent)
                .await
                .map_err(|source| Error::Io { context: parent.display().to_string(), source })?;
            let path = dir.display().to_string();
            run(None, &["init", "--bare", "--quiet", &path], None, LOCAL_TIMEOUT).await?;
        }
        Ok(Mirror { dir })
    }

    async fn git(&self, args: &[&str]) -> Result<Vec<u8>, IngestError> {
        run(Some(&self.dir), args, None, LOCAL_TIMEOUT).await
    }

    /// Fetches `branch` from the remote; returns its head commit.
    async fn fetch(&self, remote: &Remote, branch: &str) -> Result<String, IngestError> {
        let refspec = format!("+refs/heads/{branch}:{FETCHED_REF}");
        match run(
            Some(&self.dir),
            &["fetch", "--quiet", "--no-tags", "--", &remote.url, &refspec],
            Some(remote),
            NETWORK_TIMEOUT,
        )
        .await
        {
            Err(IngestError::Git(GitProblem::BranchNotFound, _)) => return Err(no_branch(branch)),
            other => other?,
        };
        self.resolve(FETCHED_REF).await?.ok_or_else(|| no_branch(branch))
    }

    /// The commit `name` names, if it names one here.
    async fn resolve(&self, name: &str) -> Result<Option<String>, IngestError> {
        let spec = format!("{name}^{{commit}}");
        match self.git(&["rev-parse", "--verify", "--quiet", &spec]).await {
            Ok(out) => Ok(Some(String::from_utf8_lossy(&out).trim().to_owned())),
            Err(_) => Ok(None),
        }
    }

    /// Bytes the mirror's objects take.
    async fn size_bytes(&self) -> Result<u64, IngestError> {
        let out = self.git(&["count-objects", "-v"]).await?;
        let kib: u64 = String::from_utf8_lossy(&out)
            .lines()
            .filter_map(|line| {
                let (key, value) = line.split_once(": ")?;
                matches!(key, "size" | "size-pack").then(|| value.trim().parse::<u64>().ok()).flatten()
            })
            .sum();
        Ok(kib * 1024)
    }

    async fn is_ancestor(&self, old: &str, new: &str) -> bool {
        self.git(&["merge-base", "--is-ancestor", old, new]).await.is_ok()
    }

    /// Every file of `commit`'s tree (symbolic links and submodules are
    /// not files).
    async fn tree(&self, commit: &str) -> Result<HashMap<String, Entry>, IngestError> {
        let out = self.git(&["ls-tree", "-r", "-z", "--long", "--full-tree", commit]).await?;
        let mut files = HashMap::new();
        for record in out.split(|b| *b == 0).filter(|r| !r.is_empty()) {
            let record = String::from_utf8_lossy(record);
            // `<mode> <type> <oid> <size>\t<path>`
            let Some((meta, path)) = record.split_once('\t') else { continue };
            let fields: Vec<&str> = meta.split_whitespace().collect();
            if let [mode, "blob", oid, size] = fields[..] {
                if mode != "120000" {
                    let size = size.parse().unwrap_or(u64::MAX);
                    files.insert(path.to_owned(), Entry { oid: oid.to_owned(), size });
                }
            }
        }
        Ok(files)
    }

    /// What changed from `old` to `new`, renames found.
    async fn diff(&self, old: &str, new: &str) -> Result<Vec<Change>, IngestError> {
        let out = self.git(&["diff", "--name-status", "-z", "-M", "--no-ext-diff", old, new]).await?;
        let mut fields = out.split(|b| *b == 0).map(|f| String::from_utf8_lossy(f).into_owned());
        let mut changes = Vec::new();
        while let Some(status) = fields.next() {
            if status.is_empty() {
                continue;
            }
            let path = fields.next().unwrap_or_default();
            match status.chars().next() {
                Some('D') => changes.push(Change::Delete(path)),
                Some('R') => {
                    let to = fields.next().unwrap_or_default();
                    changes.push(Change::Rename { from: path, to });
                }
                // A copy leaves its origin in place.
                Some('C') => changes.push(Change::Write(fields.next().unwrap_or_default())),
                _ => changes.push(Change::Write(path)),
            }
        }
        Ok(changes)
    }

    async fn read(&self, oid: &str) -> Result<Vec<u8>, IngestError> {
        self.git(&["cat-file", "blob", oid]).await
    }

    async fn keep(&self, commit: &str) -> Result<(), IngestError> {
        self.git(&["update-ref", INDEXED_REF, commit]).await.map(|_| ())
    }
}

/// One sync of a git source (see the module documentation).
pub async fn sync(
    indexer: &Indexer,
    found: &Source,
    config: &GitConfig,
    progress: &ProgressHandle,
    cancel: tokio::sync::watch::Receiver<bool>,
) -> Result<()> {
    let lore = &indexer.lore;
    let remote = Remote::of(config)?;
    let branch = match &config.branch {
        Some(branch) => branch.clone(),
        None => remote.default_branch().await?,
    };
    let mirror = Mirror::open(lore, &found.id).await?;
    let head = mirror.fetch(&remote, &branch).await?;
    let limit = u64::from(config.max_repository_mb) * 1024 * 1024;
    let size = mirror.size_bytes().await?;
    if size > limit {
        return Err(IngestError::Git(
            GitProblem::TooLarge,
            format!(
                "the repository takes {} MB, over the source's limit of {} MB",
                size / 1_000_000,
                config.max_repository_mb
            ),
        )
        .into());
    }
    let before: Option<GitState> =
        found.sync_state.clone().and_then(|state| serde_json::from_value(state).ok());
    let tree = mirror.tree(&head).await?;
    let rules = config.rules()?;
    let max_bytes = lore.settings.ingest.upload_max_bytes;
    let takes = |path: &str, entry: &Entry| rules.takes(path) && entry.size <= max_bytes;
    let files = tree.iter().filter(|(path, entry)| takes(path, entry)).count() as u64;
    let skipped = tree.len() as u64 - files;
    let base = match &before {
        Some(state) if state.branch == branch => mirror.resolve(&state.commit).await?,
        _ => None,
    };
    let citations = config.citations(&branch, &head)?;

    let mut state =
        GitState { commit: head.clone(), branch: branch.clone(), files, skipped, ..GitState::default() };
    let descends = match &base {
        Some(base) if *base != head => mirror.is_ancestor(base, &head).await,
        _ => false,
    };
    let (reads, deletes): (Vec<String>, Vec<String>) = match base {
        Some(base) if base == head => {
            state.compared = "unchanged".into();
            (Vec::new(), Vec::new())
        }
        Some(base) if descends => {
            state.compared = "diff".into();
            let mut reads = Vec::new();
            let mut deletes = Vec::new();
            for change in mirror.diff(&base, &head).await? {
                match change {
                    Change::Write(path) => reads.push(path),
                    Change::Delete(path) => deletes.push(path),
                    // The document moves with its file, so its chunks keep
                    // their vectors; only what the rename changed is embedded.
                    Change::Rename { from, to } if tree.get(&to).is_some_and(|entry| takes(&to, entry)) => {
                        indexer.rename_document(&found.id, &from, &to).await?;
                        reads.push(to);
                    }
                    Change::Rename { from, .. } => deletes.push(from),
                }
            }
            // A file the rules do not take (or too large now) is removed
            // if it was indexed before.
            let (taken, dropped): (Vec<String>, Vec<String>) =
                reads.into_iter().partition(|path| tree.get(path).is_some_and(|entry| takes(path, entry)));
            deletes.extend(dropped);
            (taken, deletes)
        }
        _ => {
            state.compared = "full".into();
            let mut all: Vec<String> = tree
                .iter()
                .filter(|(path, entry)| takes(path, entry))
                .map(|(path, _)| path.clone())
                .collect();
            all.sort();
            (all, Vec::new())
        }
    };
    progress.add(|p| {
        p.discovered += reads.len() as u64;
        p.skipped += if state.compared == "full" { skipped } else { 0 };
    });

    let mut batch: Vec<(Fetched, extract::Extracted)> = Vec::with_capacity(super::DOCUMENTS_PER_WRITE);
    for path in &reads {
        if *cancel.borrow() {
            // Cut short: the indexed commit does not move.
            return Ok(());
        }
        let Some(entry) = tree.get(path) else { continue };
        let bytes = match mirror.read(&entry.oid).await {
            Ok(bytes) => bytes,
            Err(err) => {
                indexer.record_failure(&found.id, path, None, &err.to_string()).await?;
                progress.error(path, &err.to_string());
                continue;
            }
        };
        progress.add(|p| p.fetched += 1);
        let fetched = Fetched {
            uri: path.clone(),
            url: citations.url(path),
            section_anchors: citations.anchors,
            bytes,
            ..Fetched::default()
        };
        match indexer.read(&found.id, &fetched, path).await? {
            Reading::Quarantined(reason) => progress.error(path, &reason),
            Reading::Extracted(Err(err)) => {
                indexer.record_failure(&found.id, path, fetched.url.as_deref(), &err.to_string()).await?;
                progress.error(path, &err.to_string());
            }
            Reading::Extracted(Ok(extracted)) => {
                progress.add(|p| p.extracted += 1);
                batch.push((fetched, extracted));
                if batch.len() >= super::DOCUMENTS_PER_WRITE {
                    indexer.index_batch(&found.id, &batch, progress).await?;
                    batch.clear();
                }
            }
        }
    }
    if !batch.is_empty() {
        indexer.index_batch(&found.id, &batch, progress).await?;
    }
    if *cancel.borrow() {
        return Ok(());
    }
    let removed = if state.compared == "full" {
        indexer.remove_unseen(&found.id).await?
    } else {
        let mut gone = Vec::new();
        for path in &deletes {
            if let Some(doc) = indexer.existing(&found.id, path).await? {
                gone.push(doc);
            }
        }
        indexer.remove_documents(gone).await?
    };
    progress.add(|p| p.removed += removed);
    state.changed = reads.len() as u64;
    state.removed = removed;
    mirror.keep(&head).await?;
    let recorded = serde_json::to_value(&state).map_err(|err| Error::Internal(err.to_string()))?;
    crate::sources::record_sync_state(lore, &found.id, recorded).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_s_complaints_become_stable_problems() {
        let cases = [
            ("fatal: Authentication failed for 'https://h/r.git/'", Some(GitProblem::AuthenticationFailed)),
            (
                "fatal: could not read Username for 'https://h': terminal prompts disabled",
                Some(GitProblem::AuthenticationFailed),
            ),
            ("fatal: couldn't find remote ref refs/heads/nope", Some(GitProblem::BranchNotFound)),
            (
                "fatal: unable to access 'https://h/': Could not resolve host: h",
                Some(GitProblem::Unreachable),
            ),
            (
                "fatal: unable to connect to 127.0.0.1:\n127.0.0.1[0: 127.0.0.1]: errno=Connection refused",
                Some(GitProblem::Unreachable),
            ),
            ("fatal: '/tmp/x' does not appear to be a git repository", Some(GitProblem::NotARepository)),
            ("fatal: repository 'http://127.0.0.1:9/x/' not found", Some(GitProblem::NotARepository)),
            ("fatal: something else entirely", None),
        ];
        for (said, expected) in cases {
            let got = match classify("fetch", said) {
                IngestError::Git(problem, message) => {
                    assert!(message.contains("git fetch"), "{message}");
                    Some(problem)
                }
                IngestError::Fetch(message) => {
                    assert!(message.contains("something else"), "{message}");
                    None
                }
                other => panic!("{other:?}"),
            };
            assert_eq!(got, expected, "{said}");
        }
    }
}
