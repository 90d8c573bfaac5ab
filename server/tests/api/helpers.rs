//! Spawning Lore for a test, signing in, and the real components around it
//! (an OpenID provider process, a fresh PostgreSQL database).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use chrono::Utc;
use engine::{Lore, Settings};
use sea_orm::{ConnectionTrait, Database};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

pub const ADMIN_EMAIL: &str = "ada@example.test";

pub struct TestApp {
    pub base_url: String,
    pub lore: Lore,
    pub jar: Arc<reqwest::cookie::Jar>,
    /// Shares the jar; never follows redirects, so tests see each step.
    pub client: reqwest::Client,
    pub data_dir: tempfile::TempDir,
    shutdown: Option<oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
    _provider: Option<OidcProvider>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

#[derive(Default)]
pub struct Options {
    /// Configure a real OpenID provider (otherwise the bootstrap link is the way in).
    pub oidc: bool,
    /// A PostgreSQL database URL (otherwise SQLite in the data directory).
    pub database_url: Option<String>,
    /// Point `models.dir` at an empty directory instead of the real model files.
    pub without_models: bool,
    /// `auth.admin_groups` (with `oidc`).
    pub admin_groups: Vec<String>,
    /// Any further settings (applied last).
    pub configure: Option<fn(&mut Settings)>,
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(Options::default()).await
}

pub async fn spawn_app_with(options: Options) -> TestApp {
    let data_dir = tempfile::tempdir().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let base_url = format!("http://{addr}");

    let mut settings = Settings { data_dir: data_dir.path().to_owned(), ..Settings::default() };
    settings.server.bind = addr;
    settings.server.base_url = Some(base_url.clone());
    settings.models.dir =
        Some(if options.without_models { data_dir.path().join("no-models") } else { models_dir() });
    if let Some(url) = options.database_url {
        settings.database.url = Some(engine::settings::Secret::new(url));
    }
    let provider = if options.oidc {
        let provider = OidcProvider::start(&format!("{base_url}/auth/oidc/callback")).await;
        settings.auth.oidc.issuer = Some(provider.issuer.clone());
        settings.auth.oidc.client_id = Some("lore-test".into());
        settings.auth.admins = vec![ADMIN_EMAIL.to_owned()];
        settings.auth.admin_groups = options.admin_groups;
        Some(provider)
    } else {
        None
    };
    if let Some(configure) = options.configure {
        configure(&mut settings);
    }

    let lore = Lore::open(settings).await.unwrap();
    let (shutdown, stop) = oneshot::channel::<()>();
    let served = tokio::spawn(lore_server::serve::serve(listener, lore.clone(), async move {
        let _ = stop.await;
    }));

    let jar = Arc::new(reqwest::cookie::Jar::default());
    let client = reqwest::Client::builder()
        .cookie_provider(jar.clone())
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    TestApp {
        base_url,
        lore,
        jar,
        client,
        data_dir,
        shutdown: Some(shutdown),
        served: Some(served),
        _provider: provider,
    }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.unwrap()
    }

    pub async fn post_json(&self, path: &str, body: serde_json::Value) -> reqwest::Response {
        self.client.post(self.url(path)).json(&body).send().await.unwrap()
    }

    /// Stops this server and starts another on the same data with changed
    /// settings, as an admin who edits the configuration and restarts does.
    /// The new server listens on a new port; the cookie jar carries over
    /// (cookies do not depend on the port).
    pub async fn restart_with(&mut self, change: impl FnOnce(&mut Settings)) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        // Its workers stop with it; idle keep-alive connections close at once.
        if let Some(served) = self.served.take() {
            tokio::time::timeout(std::time::Duration::from_secs(30), served)
                .await
                .expect("the old server stops within 30 s")
                .unwrap()
                .unwrap();
        }
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        self.base_url = format!("http://{addr}");
        let mut settings = (*self.lore.settings).clone();
        settings.server.bind = addr;
        settings.server.base_url = Some(self.base_url.clone());
        change(&mut settings);
        self.lore = Lore::open(settings).await.unwrap();
        let (shutdown, stop) = oneshot::channel::<()>();
        self.served =
            Some(tokio::spawn(lore_server::serve::serve(listener, self.lore.clone(), async move {
                let _ = stop.await;
            })));
        self.shutdown = Some(shutdown);
    }

    /// Signs in through a fresh bootstrap link, as `lore serve` would print it.
    pub async fn sign_in_with_bootstrap_link(&self) {
        let token = engine::auth::bootstrap::issue(&self.lore, Utc::now()).await.unwrap();
        let response = self.get(&format!("/auth/bootstrap?token={token}")).await;
        assert_eq!(response.status(), 303, "{:?}", response.text().await);
    }

    /// Signs in through the OpenID provider as `account` (`ada`: admin, `bob`:
    /// not an admin), the way a browser does: redirects, the provider's login
    /// form, and back. Returns the status of the page it lands on.
    pub async fn sign_in_with_oidc(&self, account: &str) -> reqwest::StatusCode {
        let browser = reqwest::Client::builder()
            .cookie_provider(self.jar.clone())
            .redirect(reqwest::redirect::Policy::limited(10))
            .build()
            .unwrap();
        let login_page = browser.get(self.url("/auth/oidc/start?return_to=/sources")).send().await.unwrap();
        assert_eq!(login_page.status(), 200);
        let login_url = login_page.url().clone();
        assert!(login_url.path().starts_with("/interaction/"), "landed on {login_url}");
        let landed = browser
            .post(format!("{}/login", login_url.as_str().trim_end_matches('/')))
            .form(&[("account", account)])
            .send()
            .await
            .unwrap();
        assert!(landed.url().as_str().starts_with(&self.base_url), "landed on {}", landed.url());
        landed.status()
    }

    /// The current value of the session cookie.
    pub fn session_cookie(&self) -> Option<String> {
        use reqwest::cookie::CookieStore;
        let header = self.jar.cookies(&self.base_url.parse().unwrap())?;
        header
            .to_str()
            .ok()?
            .split("; ")
            .find_map(|pair| pair.strip_prefix("lore_session="))
            .map(str::to_owned)
    }
}

/// The real embedding model files, as `scripts/test` fetches them.
pub fn models_dir() -> PathBuf {
    std::env::var_os("LORE_TEST_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| dirs_home().join(".cache/lore/models"))
}

fn dirs_home() -> PathBuf {
    std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default()
}

/// The `oidc-provider` package, run by node from `end2end/oidc/provider.mjs`.
pub struct OidcProvider {
    pub issuer: String,
    stdin: Option<tokio::process::ChildStdin>,
    _child: tokio::process::Child,
}

impl OidcProvider {
    pub async fn start(redirect_uri: &str) -> Self {
        Self::spawn(redirect_uri, false).await
    }

    /// One that is also an authorization server: the machine client
    /// `lore-machine` (secret `lore-machine-secret`) gets JWT access tokens
    /// for the resource it names.
    pub async fn start_issuing_access_tokens() -> Self {
        Self::spawn("http://127.0.0.1:9/callback", true).await
    }

    /// Puts a new signing key first (the old one stays published), and
    /// waits until the provider publishes it.
    pub async fn rotate_keys(&mut self) {
        use tokio::io::AsyncWriteExt;
        let jwks = format!("{}/jwks", self.issuer);
        let count = || async {
            let keys: serde_json::Value = reqwest::get(&jwks).await.unwrap().json().await.unwrap();
            keys["keys"].as_array().map_or(0, Vec::len)
        };
        let before = count().await;
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(b"rotate\n").await.unwrap();
        stdin.flush().await.unwrap();
        for _ in 0..100 {
            if count().await > before {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("the provider did not rotate its keys");
    }

    async fn spawn(redirect_uri: &str, access_tokens: bool) -> Self {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../end2end/oidc/provider.mjs");
        let mut command = tokio::process::Command::new("node");
        if access_tokens {
            command.env("LORE_TEST_ACCESS_TOKENS", "jwt");
        }
        let mut child = command
            .arg(script)
            .arg(redirect_uri)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs the test OpenID provider (scripts/test installs its packages)");
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        // Node starts it in about a second; the bound is generous because a
        // CI run once saw it take longer than 30 s on two busy cores.
        let issuer = tokio::time::timeout(std::time::Duration::from_secs(120), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(issuer) = line.strip_prefix("ISSUER=") {
                    return issuer.to_owned();
                }
            }
            panic!("the OpenID provider exited before listening");
        })
        .await
        .expect("the OpenID provider starts within 120 s");
        // Keep reading its output: a closed pipe would kill it on its next write.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        // Held open: the provider exits when its stdin closes.
        let stdin = child.stdin.take();
        Self { issuer, stdin, _child: child }
    }
}

/// A new, empty PostgreSQL database on the local server; dropped by `drop_postgres`.
pub async fn fresh_postgres() -> (String, String) {
    let admin_url = std::env::var("LORE_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
    let name = format!("lore_test_{}", uuid::Uuid::new_v4().simple());
    let admin = Database::connect(&admin_url)
        .await
        .expect("the local PostgreSQL server is up (scripts/test starts it)");
    admin.execute_unprepared(&format!("CREATE DATABASE {name}")).await.unwrap();
    let mut url = url::Url::parse(&admin_url).unwrap();
    url.set_path(&name);
    (url.to_string(), name)
}

pub async fn drop_postgres(name: &str) {
    let admin_url = std::env::var("LORE_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
    if let Ok(admin) = Database::connect(&admin_url).await {
        let _ = admin.execute_unprepared(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
    }
}

/// Polls an indexing run until it ends; its final view.
pub async fn finished(app: &TestApp, job: &str) -> serde_json::Value {
    for _ in 0..1200 {
        let view: serde_json::Value = app.get(&format!("/admin/jobs/{job}")).await.json().await.unwrap();
        if !matches!(view["status"].as_str(), Some("queued" | "running")) {
            return view;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("job {job} did not finish");
}

/// Runs the real `git` in `dir` as a fixed author; its output, trimmed.
pub fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
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
