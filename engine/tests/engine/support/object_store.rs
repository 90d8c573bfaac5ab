//! The S3-compatible object store of the replica tests (engine and server).

use std::path::PathBuf;

/// The S3-compatible object store of the replica tests: moto's server mode,
/// as `scripts/test` installs it (scripts/lib.sh says why this one), on a
/// port of its own on 127.0.0.1. It keeps objects in memory. Killed on drop.
pub struct ObjectStore {
    pub endpoint: String,
    _child: tokio::process::Child,
}

impl ObjectStore {
    /// Any key pair is accepted; these are the ones every client here signs with.
    const KEY_ID: &'static str = "lore-test";
    const SECRET: &'static str = "lore-test-secret";

    pub async fn start() -> Self {
        let binary = std::env::var_os("LORE_TEST_S3_SERVER").map(PathBuf::from).unwrap_or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default()
                .join(".cache/lore/moto/bin/moto_server")
        });
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        };
        let child = tokio::process::Command::new(&binary)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|err| {
                panic!("moto_server at {} runs (scripts/test installs it): {err}", binary.display())
            });
        let endpoint = format!("http://127.0.0.1:{port}");
        let client = reqwest::Client::new();
        let started = std::time::Instant::now();
        while client.get(&endpoint).send().await.is_err() {
            assert!(started.elapsed() < std::time::Duration::from_secs(60), "moto_server did not listen");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        Self { endpoint, _child: child }
    }

    /// Creates bucket `name` (S3's `CreateBucket`, a PUT on its path) and
    /// returns the URI of a LanceDB directory in it.
    pub async fn bucket(&self, name: &str) -> String {
        let created = reqwest::Client::new().put(format!("{}/{name}", self.endpoint)).send().await.unwrap();
        assert!(created.status().is_success(), "{:?}", created.text().await);
        format!("s3://{name}/lancedb")
    }

    /// `vectors.storage_options` for this store.
    pub fn options(&self) -> std::collections::BTreeMap<String, String> {
        [
            ("aws_endpoint", self.endpoint.as_str()),
            ("aws_region", "us-east-1"),
            ("allow_http", "true"),
            ("aws_access_key_id", Self::KEY_ID),
            ("aws_secret_access_key", Self::SECRET),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect()
    }

    /// The same as the environment an operator sets for `lore serve`, by
    /// the names the AWS SDKs read.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_REGION", "us-east-1".to_owned()),
            ("AWS_ALLOW_HTTP", "true".to_owned()),
            ("AWS_ACCESS_KEY_ID", Self::KEY_ID.to_owned()),
            ("AWS_SECRET_ACCESS_KEY", Self::SECRET.to_owned()),
        ]
    }
}
