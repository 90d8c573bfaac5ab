//! Git sources against real repositories made here with the `git` command,
//! read from a local path and served by `git daemon` on 127.0.0.1, with the
//! real embedder, SQLite and LanceDB.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{indexed_uris, open, progress, run};
use engine::audit::Actor;
use engine::ingest::git::{GitProblem, GitState};
use engine::ingest::IngestError;
use engine::retrieve::RetrievalSettings;
use engine::search::{self, Reach};
use engine::sources::{self, NewSource};
use engine::{Error, Lore};

/// A repository being written, on branch `main`.
struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    fn new() -> Repo {
        let repo = Repo { dir: tempfile::tempdir().unwrap() };
        repo.git(&["init", "--quiet", "-b", "main"]);
        repo
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(self.path())
            .envs([
                ("GIT_AUTHOR_NAME", "Docs"),
                ("GIT_AUTHOR_EMAIL", "docs@acme.test"),
                ("GIT_COMMITTER_NAME", "Docs"),
                ("GIT_COMMITTER_EMAIL", "docs@acme.test"),
                ("GIT_CONFIG_NOSYSTEM", "1"),
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    fn write(&self, path: &str, content: impl AsRef<[u8]>) {
        let file = self.path().join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, content).unwrap();
    }

    fn commit(&self, message: &str) -> String {
        self.git(&["add", "--all"]);
        self.git(&["commit", "--quiet", "-m", message]);
        self.head()
    }

    fn head(&self) -> String {
        self.git(&["rev-parse", "HEAD"])
    }
}

const INSTALL: &str = "---\ntitle: Installing Acme\n---\n# Install\n\nDownload the package and unpack it in /opt/acme.\n\n## Ports\n\nAcme listens on port 7421 by default.\n";

/// Markdown with front matter, MDX, reStructuredText and AsciiDoc, beside
/// files a documentation source does not take.
fn documentation() -> Repo {
    let repo = Repo::new();
    repo.write("docs/install.md", INSTALL);
    repo.write(
        "docs/deploy.mdx",
        "import Note from '@site/Note';\n\n# Deploy\n\n<Note>\nThe deploy key rotates every 90 days.\n</Note>\n",
    );
    repo.write(
        "manual/backup.rst",
        "Backups\n=======\n\n.. toctree::\n   restore\n\nNightly\n-------\n\nBackups run every night at 02:30 and keep 14 copies.\n",
    );
    repo.write(
        "book/restore.adoc",
        "= Restore Guide\n:toc: left\n\n== Restoring\n\nA restore takes about 40 minutes per terabyte.\n",
    );
    repo.write("src/main.rs", "fn main() {}\n");
    repo.write("logo.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    repo.commit("Docs");
    repo
}

/// `git daemon` serving the repositories under `base` on 127.0.0.1.
struct Daemon {
    child: Child,
    port: u16,
}

impl Daemon {
    fn start(base: &Path) -> Daemon {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("git")
            .args(["daemon", "--reuseaddr", "--export-all", "--listen=127.0.0.1"])
            .arg(format!("--port={port}"))
            .arg(format!("--base-path={}", base.display()))
            .arg(base)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(started.elapsed() < Duration::from_secs(10), "git daemon did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Daemon { child, port }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn git_source(lore: &Lore, config: serde_json::Value) -> Result<String, Error> {
    let new = NewSource {
        name: "Acme docs".into(),
        kind: "git".into(),
        config: Some(config),
        ..NewSource::default()
    };
    sources::create(lore, &Actor::System, new).await.map(|source| source.id)
}

async fn state(lore: &Lore, source: &str) -> GitState {
    let found = sources::get(lore, source).await.unwrap();
    serde_json::from_value(found.sync_state.expect("a completed sync records its state")).unwrap()
}

/// The best chunk for `query`: its title, heading, URL and text.
async fn best(lore: &Lore, query: &str) -> (String, Option<String>, Option<String>, String) {
    let found = search::search(lore, query, &RetrievalSettings::default(), Reach::Enabled).await.unwrap();
    let chunk = &found.results.first().unwrap_or_else(|| panic!("nothing found for {query:?}")).chunk;
    (chunk.title.clone(), chunk.heading.clone(), chunk.url.clone(), chunk.text.clone())
}

#[tokio::test]
async fn a_served_repository_s_documentation_files_are_indexed_by_section_and_cited_through_the_template() {
    let repo = documentation();
    let served = tempfile::tempdir().unwrap();
    let bare = served.path().join("docs.git");
    let status = Command::new("git")
        .args(["clone", "--quiet", "--bare"])
        .arg(repo.path())
        .arg(&bare)
        .status()
        .unwrap();
    assert!(status.success());
    let daemon = Daemon::start(served.path());
    let (lore, _data) = open().await;
    let source = git_source(
        &lore,
        serde_json::json!({
            "url": format!("git://127.0.0.1:{}/docs.git", daemon.port),
            "citation_url": "https://forge.test/acme/docs/blob/{branch}/{path}#{anchor}",
        }),
    )
    .await
    .unwrap();

    let first = run(&lore, Some(&source), false).await;
    assert_eq!(first.status, "succeeded", "{:?}", first.message);
    assert_eq!(
        indexed_uris(&lore, &source).await,
        ["book/restore.adoc", "docs/deploy.mdx", "docs/install.md", "manual/backup.rst"]
    );
    let p = progress(&first);
    assert_eq!((p.skipped, p.failed), (2, 0), "the Rust file and the image are skipped: {p:?}");

    // reStructuredText: its titles are the heading path, its anchor the link's.
    let (title, heading, url, text) = best(&lore, "How many backup copies are kept?").await;
    assert_eq!(title, "Backups");
    assert_eq!(heading.as_deref(), Some("Backups › Nightly"));
    assert_eq!(url.as_deref(), Some("https://forge.test/acme/docs/blob/main/manual/backup.rst#nightly"));
    assert!(text.contains("14 copies") && !text.contains("toctree"), "{text}");
    // Markdown: the front matter's title, the section's anchor.
    let (title, _, url, _) = best(&lore, "Which port does Acme listen on?").await;
    assert_eq!(title, "Installing Acme");
    assert_eq!(url.as_deref(), Some("https://forge.test/acme/docs/blob/main/docs/install.md#ports"));
    // MDX without its import and components; AsciiDoc without its attributes.
    let (_, _, _, text) = best(&lore, "How often does the deploy key rotate?").await;
    assert!(text.contains("90 days") && !text.contains("import") && !text.contains("<Note>"), "{text}");
    let (title, heading, _, text) = best(&lore, "How long does a restore take per terabyte?").await;
    assert_eq!((title.as_str(), heading.as_deref()), ("Restore Guide", Some("Restoring")));
    assert!(!text.contains(":toc:"), "{text}");

    // The commit indexed is recorded, and said on the Sources screen.
    let recorded = state(&lore, &source).await;
    assert_eq!((recorded.commit.as_str(), recorded.branch.as_str()), (repo.head().as_str(), "main"));
    let summary = sources::get(&lore, &source).await.unwrap().sync_summary().unwrap();
    assert!(summary.starts_with(&format!("Commit {} of main", &repo.head()[..12])), "{summary}");
}

#[tokio::test]
async fn a_commit_re_embeds_only_what_it_changed_and_a_force_push_is_compared_by_content() {
    let repo = documentation();
    let (lore, data) = open().await;
    let source =
        git_source(&lore, serde_json::json!({"url": repo.path().display().to_string()})).await.unwrap();
    let first = run(&lore, Some(&source), false).await;
    assert_eq!(first.status, "succeeded", "{:?}", first.message);
    assert_eq!(state(&lore, &source).await.compared, "full");

    // Nothing new: nothing read.
    let same = run(&lore, Some(&source), false).await;
    let p = progress(&same);
    assert_eq!((p.fetched, p.embedded, p.removed), (0, 0, 0), "{p:?}");
    assert_eq!(state(&lore, &source).await.compared, "unchanged");

    // One file modified in one section, one renamed, one deleted.
    repo.write("docs/install.md", INSTALL.replace("port 7421", "port 9180"));
    repo.git(&["mv", "manual/backup.rst", "manual/backups.rst"]);
    repo.git(&["rm", "--quiet", "book/restore.adoc"]);
    let head = repo.commit("Move the port, rename the backups page, drop the restore guide");
    let next = run(&lore, Some(&source), false).await;
    assert_eq!(next.status, "succeeded", "{:?}", next.message);
    let p = progress(&next);
    assert_eq!((p.fetched, p.removed), (2, 1), "the modified and the renamed file are read: {p:?}");
    assert_eq!(p.embedded, 1, "only the changed section is embedded again: {p:?}");
    let recorded = state(&lore, &source).await;
    assert_eq!((recorded.commit.as_str(), recorded.compared.as_str()), (head.as_str(), "diff"));
    assert_eq!((recorded.changed, recorded.removed), (2, 1));
    assert_eq!(
        indexed_uris(&lore, &source).await,
        ["docs/deploy.mdx", "docs/install.md", "manual/backups.rst"]
    );
    let (_, _, _, text) = best(&lore, "Which port does Acme listen on?").await;
    assert!(text.contains("9180"), "{text}");
    let found = search::search(&lore, "restore per terabyte", &RetrievalSettings::default(), Reach::Enabled)
        .await
        .unwrap();
    assert!(found.results.iter().all(|hit| !hit.chunk.text.contains("terabyte")));

    // The last commit rewritten and force-pushed: not a descendant of the
    // indexed one, so every file is compared by content.
    repo.write("docs/deploy.mdx", "# Deploy\n\nThe deploy key rotates every 30 days.\n");
    repo.git(&["add", "--all"]);
    repo.git(&["commit", "--quiet", "--amend", "-m", "Rewritten"]);
    let rewritten = run(&lore, Some(&source), false).await;
    assert_eq!(rewritten.status, "succeeded", "{:?}", rewritten.message);
    let p = progress(&rewritten);
    assert_eq!((p.unchanged, p.embedded, p.removed), (2, 1, 0), "{p:?}");
    let recorded = state(&lore, &source).await;
    assert_eq!((recorded.commit, recorded.compared.as_str()), (repo.head(), "full"));
    let (_, _, _, text) = best(&lore, "How often does the deploy key rotate?").await;
    assert!(text.contains("30 days"), "{text}");

    // A deleted source takes its mirror with it.
    let mirror = data.path().join("git").join(&source);
    assert!(mirror.join("HEAD").exists());
    sources::delete(&lore, &Actor::System, &source).await.unwrap();
    assert!(!mirror.exists());
}

#[tokio::test]
async fn bad_repositories_are_refused_with_their_codes_and_a_failed_sync_keeps_the_last_commit_serving() {
    let repo = documentation();
    let (lore, _data) = open().await;
    let not_git = tempfile::tempdir().unwrap();
    let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let at = repo.path().display().to_string();
    for (config, expected) in [
        (serde_json::json!({"url": not_git.path().display().to_string()}), GitProblem::NotARepository),
        (serde_json::json!({"url": at, "branch": "nope"}), GitProblem::BranchNotFound),
        (serde_json::json!({"url": format!("git://127.0.0.1:{closed}/docs.git")}), GitProblem::Unreachable),
        (
            serde_json::json!({"url": "https://127.0.0.1:9/docs.git", "token_env": "LORE_TEST_NO_SUCH_TOKEN"}),
            GitProblem::AuthenticationFailed,
        ),
    ] {
        match git_source(&lore, config.clone()).await {
            Err(Error::Ingest(IngestError::Git(problem, message))) => {
                assert_eq!(problem, expected, "{config}: {message}");
                assert!(!message.contains("LORE_TEST_NO_SUCH_TOKEN=") && !message.is_empty());
            }
            other => panic!("{config}: {other:?}"),
        }
    }
    assert!(sources::list(&lore).await.unwrap().is_empty(), "nothing refused is stored");

    // Over its size limit, a sync fails and the commit indexed before serves on.
    let source = git_source(&lore, serde_json::json!({"url": at, "max_repository_mb": 1})).await.unwrap();
    let first = run(&lore, Some(&source), false).await;
    assert_eq!(first.status, "succeeded", "{:?}", first.message);
    let indexed_commit = repo.head();
    let mut noise = Vec::with_capacity(3 << 20);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    while noise.len() < 3 << 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        noise.extend_from_slice(&x.to_le_bytes());
    }
    repo.write("assets/video.bin", noise);
    repo.write("docs/install.md", INSTALL.replace("7421", "1111"));
    repo.commit("A large file");
    let failed = run(&lore, Some(&source), false).await;
    assert_eq!(failed.status, "failed");
    assert!(failed.message.as_deref().unwrap_or_default().contains("limit of 1 MB"), "{:?}", failed.message);
    assert_eq!(state(&lore, &source).await.commit, indexed_commit);
    let (_, _, _, text) = best(&lore, "Which port does Acme listen on?").await;
    assert!(text.contains("7421"), "{text}");
}
