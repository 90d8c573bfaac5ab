//! Two `lore serve` replicas, as docs/deployment.md sets them up: one
//! PostgreSQL database, one S3-compatible object store for the vectors
//! (moto's server, see `ObjectStore`), the same master key, a data
//! directory each, and a round-robin proxy in front. What one replica
//! changes, the other serves at once; the work is shared and counted once.
//! (A replica killed mid-job is `indexing_jobs.rs`'s test, on the same
//! database and store.)

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::{Lore, Settings};
use futures::StreamExt;
use reqwest::multipart::{Form, Part};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};

use crate::helpers::{drop_postgres, fresh_postgres, models_dir};
use crate::llama::LlamaServer;
use crate::mcp::{channel, heard, initialize, tool_names, SCHEMA};
use crate::object_store::ObjectStore;
use crate::site::{page_html, page_text};

/// 32 bytes, base64: every replica must hold the same master key.
const MASTER_KEY: &str = "bG9yZS1yZXBsaWNhcy10ZXN0LW1hc3Rlci1rZXktMzI=";

/// The uploaded guides, one HTML file each, as the answer tests' site
/// serves them: the question below is grounded in them with SmolLM2.
const GUIDES: usize = 12;

const QUESTION: &str = "What does guide 4 explain?";

/// How many answers the proxy spreads over both replicas.
const ANSWERS: usize = 1_000;

/// One `lore serve` process; killed on drop.
struct Replica {
    base: String,
    child: Child,
    dir: tempfile::TempDir,
}

impl Replica {
    /// One replica of the deployment whose public address is `base_url`
    /// (the proxy's, as `server.base_url` of every replica).
    fn start(base_url: &str, database: &str, vectors: &str, store: &ObjectStore) -> Replica {
        let dir = tempfile::tempdir().unwrap();
        let addr = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap()
        };
        let mut command = Command::new(env!("CARGO_BIN_EXE_lore"));
        for (name, _) in std::env::vars() {
            if name.starts_with("LORE_") || name.starts_with("AWS_") {
                command.env_remove(name);
            }
        }
        let log = std::fs::File::create(dir.path().join("serve.log")).unwrap();
        let child = command
            .arg("serve")
            .env("LORE_DATA_DIR", dir.path())
            .env("LORE_MODELS__DIR", models_dir())
            .env("LORE_SERVER__BIND", addr.to_string())
            .env("LORE_SERVER__BASE_URL", base_url)
            .env("LORE_DATABASE__URL", database)
            .env("LORE_VECTORS__URI", vectors)
            .env("LORE_MASTER_KEY", MASTER_KEY)
            .env("LORE_INGEST__ALLOW_PRIVATE_ADDRESSES", "true")
            .envs(store.env())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        Replica { base: format!("http://{addr}"), child, dir }
    }

    fn addr(&self) -> SocketAddr {
        self.base.trim_start_matches("http://").parse().unwrap()
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// What the process wrote to stderr, for a failure's message.
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("serve.log")).unwrap_or_default()
    }

    async fn wait_ready(&mut self) {
        let client = reqwest::Client::new();
        let started = Instant::now();
        loop {
            if let Ok(response) = client.get(self.url("/healthz")).send().await {
                if response.status() == StatusCode::OK {
                    return;
                }
            }
            assert!(self.child.try_wait().unwrap().is_none(), "lore serve exited:\n{}", self.log());
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "lore serve did not start:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TCP proxy on 127.0.0.1 handing each new connection to the next
/// backend in turn; counts the connections each one got.
struct Proxy {
    base: String,
    served: Arc<Vec<AtomicUsize>>,
}

impl Proxy {
    /// Serves on `listener`, bound before the replicas start (its address
    /// is their base URL).
    fn start(listener: TcpListener, backends: Vec<SocketAddr>) -> Proxy {
        let base = format!("http://{}", listener.local_addr().unwrap());
        let served: Arc<Vec<AtomicUsize>> = Arc::new(backends.iter().map(|_| AtomicUsize::new(0)).collect());
        let counts = served.clone();
        tokio::spawn(async move {
            let next = AtomicUsize::new(0);
            while let Ok((mut inbound, _)) = listener.accept().await {
                let turn = next.fetch_add(1, Ordering::Relaxed) % backends.len();
                counts[turn].fetch_add(1, Ordering::Relaxed);
                let backend = backends[turn];
                tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(backend).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        });
        Proxy { base, served }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

/// Both replicas, the proxy, and an admin signed in (its cookie holds on
/// every replica: the sessions are in the database, signed with the
/// shared master key).
struct Cluster {
    a: Replica,
    b: Replica,
    proxy: Proxy,
    /// A process of its own on the same database and store, for what a test
    /// reads behind the API's back (never to make a change under test).
    watcher: Lore,
    /// Keeps its cookie; one connection per request, so that each request
    /// through the proxy goes to the next replica.
    admin: reqwest::Client,
    database: String,
    _store: ObjectStore,
    _watcher_dir: tempfile::TempDir,
}

impl Cluster {
    async fn start() -> Cluster {
        let store = ObjectStore::start().await;
        let vectors = store.bucket("lore").await;
        let (url, database) = fresh_postgres().await;
        let watcher_dir = tempfile::tempdir().unwrap();
        let mut settings = Settings { data_dir: watcher_dir.path().to_owned(), ..Settings::default() };
        settings.models.dir = Some(models_dir());
        settings.database.url = Some(engine::settings::Secret::new(url.clone()));
        settings.master_key = Some(engine::settings::Secret::new(MASTER_KEY));
        settings.vectors.uri = Some(vectors.clone());
        settings.vectors.storage_options = store.options();
        // Opened first, so the schema exists before either replica starts.
        let watcher = Lore::open(settings).await.unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let public = format!("http://{}", listener.local_addr().unwrap());
        let (mut a, mut b) = (
            Replica::start(&public, &url, &vectors, &store),
            Replica::start(&public, &url, &vectors, &store),
        );
        a.wait_ready().await;
        b.wait_ready().await;
        let proxy = Proxy::start(listener, vec![a.addr(), b.addr()]);
        let admin = reqwest::Client::builder()
            .cookie_store(true)
            .pool_max_idle_per_host(0)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let token = engine::auth::bootstrap::issue(&watcher, chrono::Utc::now()).await.unwrap();
        let signed_in = admin.get(a.url(&format!("/auth/bootstrap?token={token}"))).send().await.unwrap();
        assert_eq!(signed_in.status(), StatusCode::SEE_OTHER, "{:?}", signed_in.text().await);
        Cluster { a, b, proxy, watcher, admin, database, _store: store, _watcher_dir: watcher_dir }
    }

    async fn post(&self, url: String, body: Value) -> Value {
        let response = self.admin.post(&url).json(&body).send().await.unwrap();
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "POST {url}: {status} {body}");
        body
    }

    async fn get(&self, url: String) -> Value {
        let response = self.admin.get(&url).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "GET {url}");
        response.json().await.unwrap()
    }

    /// Polls run `job` (through `replica`) until it ends; its final view.
    async fn finished(&self, replica: &Replica, job: &str) -> Value {
        let started = Instant::now();
        loop {
            let view = self.get(replica.url(&format!("/admin/jobs/{job}"))).await;
            if !matches!(view["status"].as_str(), Some("queued" | "running")) {
                return view;
            }
            assert!(started.elapsed() < Duration::from_secs(600), "run {job} did not end: {view}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn stop(self) {
        let database = self.database.clone();
        drop(self);
        drop_postgres(&database).await;
    }
}

/// An assistant registers and its person (the admin) consents through
/// `on`; the code is exchanged through `then`: the access token.
async fn oauth_grant(cluster: &Cluster, on: &Replica, then: &Replica) -> String {
    use base64::Engine as _;
    use sha2::Digest;
    let callback = "http://127.0.0.1:9/callback";
    let registered = cluster.post(on.url("/oauth/register"), json!({"redirect_uris": [callback]})).await;
    let client = registered["client_id"].as_str().unwrap().to_owned();
    let verifier = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
    let challenge =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()));
    // The resource is the deployment's tool server, whichever replica serves it.
    let resource = format!("{}/mcp", cluster.proxy.base);
    let form = [
        ("response_type", "code"),
        ("client_id", &client),
        ("redirect_uri", callback),
        ("scope", "mcp"),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
        ("resource", &resource),
        ("decision", "allow"),
        ("granted", "mcp"),
    ];
    let consented = cluster.admin.post(on.url("/oauth/authorize")).form(&form).send().await.unwrap();
    assert_eq!(consented.status(), StatusCode::SEE_OTHER, "{:?}", consented.text().await);
    let location = url::Url::parse(consented.headers()["location"].to_str().unwrap()).unwrap();
    let code = location.query_pairs().find(|(name, _)| name == "code").unwrap().1.into_owned();
    let exchange = [
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("client_id", &client),
        ("redirect_uri", callback),
        ("code_verifier", &verifier),
        ("resource", &resource),
    ];
    let issued: Value = reqwest::Client::new()
        .post(then.url("/oauth/token"))
        .form(&exchange)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    issued["access_token"].as_str().unwrap_or_else(|| panic!("a token: {issued}")).to_owned()
}

/// The status of an `initialize` at `replica`'s tool server with `bearer`.
async fn mcp_status(replica: &Replica, bearer: &str) -> StatusCode {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    reqwest::Client::new()
        .post(replica.url("/mcp"))
        .bearer_auth(bearer)
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap()
        .status()
}

async fn retrieve(replica: &Replica, key: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(replica.url("/retrieve"))
        .header("x-api-key", key)
        .json(&json!({"query": QUESTION}))
        .send()
        .await
        .unwrap()
}

/// The titles of what `replica` retrieves for the question, best first.
async fn retrieved(replica: &Replica, key: &str) -> Vec<String> {
    let response = retrieve(replica, key).await;
    assert_eq!(response.status(), StatusCode::OK, "{}", replica.base);
    let body: Value = response.json().await.unwrap();
    body["results"].as_array().unwrap().iter().map(|hit| hit["title"].as_str().unwrap().to_owned()).collect()
}

/// The Dashboard's count of questions over the last hour, as `url` shows
/// it, once it has reached `expected` (runs are recorded behind the reply),
/// and a moment later, so that a count going past it shows too.
async fn queries(cluster: &Cluster, url: String, expected: i64) -> i64 {
    let count = || async {
        cluster.post(url.clone(), json!({"hours": 1})).await["totals"]["queries"].as_i64().unwrap()
    };
    let started = Instant::now();
    while count().await < expected && started.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    count().await
}

async fn answer(client: &reqwest::Client, url: String, key: &str) -> Value {
    let response =
        client.post(url).header("x-api-key", key).json(&json!({"question": QUESTION})).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.unwrap()
}

async fn failing_closed(replica: &Replica, key: &str) -> bool {
    let response = retrieve(replica, key).await;
    if response.status() != StatusCode::SERVICE_UNAVAILABLE {
        return false;
    }
    let body: Value = response.json().await.unwrap();
    body["error"]["code"] == "retrieval_failing_closed"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_on_postgres_and_s3_serve_as_one() {
    let llama = LlamaServer::start().await;
    let cluster = Cluster::start().await;
    let Cluster { a, b, proxy, .. } = &cluster;
    // The session made on A holds on B.
    assert_eq!(cluster.admin.get(b.url("/admin/sources/")).send().await.unwrap().status(), StatusCode::OK);

    // A source created and uploaded through A: indexed by whichever
    // replica claims the run (the file is in the database, not on A's
    // disk), and found through both.
    let source = cluster.post(a.url("/admin/sources/"), json!({"name": "Guides", "kind": "upload"})).await;
    let mut form = Form::new();
    for n in 1..=GUIDES {
        let page = page_html(n, GUIDES, &page_text(n), None);
        form = form.part("file", Part::bytes(page.into_bytes()).file_name(format!("guide-{n}.html")));
    }
    let uploaded = cluster
        .admin
        .post(a.url(&format!("/admin/sources/{}/files", source["id"].as_str().unwrap())))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert!(uploaded.status().is_success());
    let receipts: Value = uploaded.json().await.unwrap();
    for receipt in receipts.as_array().unwrap() {
        let run = receipt["job"]["id"].as_str().unwrap();
        assert_eq!(cluster.finished(b, run).await["status"], "succeeded");
    }
    let key = cluster
        .post(
            a.url("/admin/keys"),
            json!({"name": "backend", "kind": "secret", "scopes": ["answer", "retrieve"]}),
        )
        .await;
    let (key_id, key) =
        (key["key"]["id"].as_str().unwrap().to_owned(), key["raw_key"].as_str().unwrap().to_owned());
    let found = retrieved(a, &key).await;
    assert!(found.iter().take(3).any(|title| title.starts_with("Guide 4")), "{found:?}");
    assert_eq!(retrieved(b, &key).await, found, "B finds what A finds");

    // A profile version saved on A: B's cached answers of the old version
    // no longer serve.
    let added = cluster
        .admin
        .post(a.url("/admin/providers/quick-add"))
        .json(&json!({"kind": "llama_cpp", "endpoint": llama.endpoint, "model": "smollm2-135m-instruct"}))
        .send()
        .await
        .unwrap();
    assert_eq!(added.status(), StatusCode::CREATED);
    let plain = reqwest::Client::new();
    let first = answer(&plain, b.url("/answer"), &key).await;
    assert_eq!(first["refused"], false, "{first:#}");
    assert_eq!(first["cache"]["status"], "miss");
    assert_eq!(answer(&plain, b.url("/answer"), &key).await["cache"]["status"], "hit");
    let overview = cluster.get(a.url("/admin/profile")).await;
    let mut snapshot = overview["active"]["snapshot"].clone();
    snapshot["cache"]["min_similarity"] = json!(0.9);
    let base = overview["active"]["version"].as_i64().unwrap();
    cluster
        .post(
            a.url("/admin/profile/versions"),
            json!({"base_version": base, "snapshot": snapshot, "note": "on A"}),
        )
        .await;
    let under_new = answer(&plain, b.url("/answer"), &key).await;
    assert_eq!(under_new["cache"]["status"], "miss", "{under_new:#}");
    assert_eq!(under_new["profile_version"], base + 1);

    // 1,000 answers through the proxy, half on each replica: the Dashboard
    // counts each once, whichever replica served it.
    // The three answers so far, all recorded.
    let before = queries(&cluster, proxy.url("/admin/observability/"), 3).await;
    assert_eq!(before, 3);
    let served_before: Vec<usize> = proxy.served.iter().map(|n| n.load(Ordering::Relaxed)).collect();
    let answered: Vec<Value> = futures::stream::iter(0..ANSWERS)
        .map(|_| {
            let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
            let (url, key) = (proxy.url("/answer"), key.clone());
            async move { answer(&client, url, &key).await }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    assert!(answered.iter().all(|reply| reply["refused"] == false));
    let served: Vec<usize> = proxy
        .served
        .iter()
        .zip(&served_before)
        .map(|(n, before)| n.load(Ordering::Relaxed) - before)
        .collect();
    assert_eq!(served, [ANSWERS / 2, ANSWERS / 2]);
    let total = before + ANSWERS as i64;
    assert_eq!(queries(&cluster, a.url("/admin/observability/"), total).await, total);
    assert_eq!(queries(&cluster, b.url("/admin/observability/"), total).await, total, "B's Dashboard is A's");

    // A key revoked through A is refused by B within a second.
    assert_eq!(retrieve(b, &key).await.status(), StatusCode::OK);
    cluster.post(a.url(&format!("/admin/keys/{key_id}/revoke")), json!({})).await;
    let revoked = Instant::now();
    while retrieve(b, &key).await.status() != StatusCode::UNAUTHORIZED {
        assert!(revoked.elapsed() < Duration::from_secs(1), "B still takes the revoked key");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let key = cluster
        .post(a.url("/admin/keys"), json!({"name": "backend 2", "kind": "secret", "scopes": ["retrieve"]}))
        .await["raw_key"]
        .as_str()
        .unwrap()
        .to_owned();

    // An MCP session on B hears `tools/list_changed` when its user's role
    // changes through A.
    engine::appdb::schema::apply(&cluster.watcher, &engine::audit::Actor::System, SCHEMA).await.unwrap();
    let reads_dogs = json!({"dev": {"tables": {"dog": {"read": true, "insert": false, "update": false, "delete": false}}}});
    cluster
        .post(a.url("/operation"), json!({"operation": "add_role", "role": "ann", "permission": reads_dogs}))
        .await;
    cluster
        .post(a.url("/operation"), json!({"operation": "add_user", "role": "ann", "username": "ann"}))
        .await;
    let ann = cluster
        .post(
            a.url("/admin/keys"),
            json!({"name": "ann", "kind": "secret", "scopes": ["mcp"], "user": "ann"}),
        )
        .await["raw_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let on_b = b.url("/mcp");
    let session = initialize(&on_b, &ann).await;
    let tools_before = tool_names(&on_b, &ann, &session).await;
    let mut stream = channel(&on_b, &ann, &session).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let more = json!({"dev": {"tables": {
        "dog": {"read": true, "insert": false, "update": false, "delete": false},
        "cat": {"read": true, "insert": true, "update": false, "delete": false}}}});
    cluster
        .post(a.url("/operation"), json!({"operation": "alter_role", "id": "ann", "permission": more}))
        .await;
    let event = heard(&mut stream, "list_changed", Duration::from_secs(1))
        .await
        .expect("B's session is told within a second");
    assert!(event.contains("notifications/tools/list_changed"), "{event}");
    assert_ne!(tool_names(&on_b, &ann, &session).await, tools_before);

    // An assistant's grant, made through A, is taken by B; revoked through
    // A, it is refused by B at its next request.
    let access = oauth_grant(&cluster, a, b).await;
    assert_eq!(mcp_status(b, &access).await, StatusCode::OK);
    let connections = cluster.get(a.url("/admin/oauth/connections")).await;
    let grant = connections[0]["grant_id"].as_str().unwrap().to_owned();
    cluster.post(a.url(&format!("/admin/oauth/connections/{grant}/revoke")), json!({})).await;
    assert_eq!(mcp_status(b, &access).await, StatusCode::UNAUTHORIZED, "B honours A's revocation at once");

    // The embedding role rebound on A: B refuses to retrieve at once (no
    // query embedded with the old model), and the full reindex, run here
    // through B, re-stamps the corpus for both.
    let embeddings = LlamaServer::start_embeddings().await;
    let account = cluster
        .post(
            a.url("/admin/providers/accounts"),
            json!({"kind": "llama_cpp", "endpoint": embeddings.endpoint, "name": "embeddings"}),
        )
        .await;
    let target = cluster
        .post(
            a.url("/admin/targets"),
            json!({"account_id": account["id"], "capability": "embedding", "model": "smollm2-135m"}),
        )
        .await;
    let target = target["id"].as_str().unwrap().to_owned();
    assert_eq!(
        cluster.post(a.url(&format!("/admin/targets/{target}/probe")), json!({})).await["state"],
        "ready"
    );
    let on_node = retrieved(b, &key).await;
    assert!(!on_node.is_empty(), "B has the on-node model loaded");
    let bound = cluster
        .admin
        .put(a.url("/admin/roles/embedding"))
        .json(&json!({"target_id": target}))
        .send()
        .await
        .unwrap();
    assert_eq!(bound.status(), StatusCode::OK, "{:?}", bound.text().await);
    assert!(failing_closed(b, &key).await, "B fails closed on its first request after the rebinding");
    assert!(failing_closed(a, &key).await);
    let reindex = cluster.post(b.url("/admin/reindex"), json!({})).await;
    assert_eq!(cluster.finished(a, reindex["id"].as_str().unwrap()).await["status"], "succeeded");
    let stamp = engine::fingerprint::stamped(&cluster.watcher.db).await.unwrap().unwrap();
    assert!(stamp.embedding_model.starts_with("smollm2-135m"), "{stamp:?}");
    // (Another model, another ranking and cutoff: the same corpus found,
    // not the same hits.) The replica that did not run the reindex sees its
    // last writes (the closing compaction) within LanceDB's consistency
    // interval, and until then may rank near-ties from the version before.
    tokio::time::sleep(engine::index::lance::OTHER_WRITERS_SEEN_WITHIN + Duration::from_millis(250)).await;
    let found = retrieved(a, &key).await;
    assert!(!found.is_empty(), "A retrieves with the new model");
    assert_eq!(retrieved(b, &key).await, found, "B retrieves with the new model as A does");

    drop((llama, embeddings));
    cluster.stop().await;
}
