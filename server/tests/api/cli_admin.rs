//! `lore keys …` and `lore providers …` as an operator runs them: the raw
//! key printed once; the provider key read from the environment and never
//! printed, not even with debug logging.

use std::process::Command;

use super::llama::LlamaServer;

fn lore(data_dir: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lore"));
    for (name, _) in std::env::vars() {
        if name.starts_with("LORE_") {
            command.env_remove(name);
        }
    }
    command.env("LORE_DATA_DIR", data_dir).env("RUST_LOG", "debug");
    command
}

fn run(command: &mut Command) -> (bool, String, String) {
    let output = command.output().unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn keys_create_prints_the_raw_key_once_and_revoke_takes_effect() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, raw, err) =
        run(lore(dir.path()).args(["keys", "create", "--name", "ops", "--scope", "retrieve"]));
    assert!(ok, "{err}");
    let raw = raw.trim().to_owned();
    assert!(raw.starts_with("lore_sk_") && raw.len() == 40, "{raw}");
    assert!(err.contains("only time"), "{err}");

    let (ok, listed, _) = run(lore(dir.path()).args(["keys", "list", "--json"]));
    assert!(ok);
    assert!(!listed.contains(&raw), "the list never shows the raw key");
    let keys: serde_json::Value = serde_json::from_str(&listed).unwrap();
    let id = keys[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(keys[0]["status"], "active");

    let (ok, _, _) = run(lore(dir.path()).args(["keys", "revoke", &id]));
    assert!(ok);
    let (_, listed, _) = run(lore(dir.path()).args(["keys", "list", "--json"]));
    assert_eq!(serde_json::from_str::<serde_json::Value>(&listed).unwrap()[0]["status"], "revoked");

    let (ok, _, err) = run(lore(dir.path()).args(["keys", "create", "--name", "w", "--kind", "widget"]));
    assert!(!ok);
    assert!(err.contains("invalid_key_request"), "{err}");
    // Under --json the failure is the API's error body, on stdout.
    let (ok, out, _) =
        run(lore(dir.path()).args(["keys", "create", "--name", "w", "--kind", "widget", "--json"]));
    assert!(!ok);
    let failed: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("not JSON: {out}"));
    assert_eq!(failed["error"]["code"], "invalid_key_request", "{failed}");
}

#[tokio::test]
async fn providers_add_reads_the_key_from_the_environment_and_never_prints_it() {
    let llama = LlamaServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let key = "sk-cli-8c6976e5b5410415bde9";
    let mut add = lore(dir.path());
    add.env("TEST_PROVIDER_KEY", key).args([
        "providers",
        "add",
        "--kind",
        "custom",
        "--endpoint",
        &llama.endpoint,
        "--model",
        "smollm2",
        "--api-key-env",
        "TEST_PROVIDER_KEY",
    ]);
    let (ok, out, err) = tokio::task::spawn_blocking(move || run(&mut add)).await.unwrap();
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("now generates answers"), "{out}");
    assert!(!out.contains(key) && !err.contains(key), "the key was printed:\n{out}\n{err}");

    let data = dir.path().to_owned();
    let (ok, listed, err) =
        tokio::task::spawn_blocking(move || run(lore(&data).args(["providers", "list", "--json"])))
            .await
            .unwrap();
    assert!(ok, "{err}");
    assert!(!listed.contains(key) && !err.contains(key));
    let overview: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(overview["accounts"][0]["has_api_key"], true);
    let generation =
        overview["roles"].as_array().unwrap().iter().find(|r| r["role"] == "generation").unwrap();
    assert_eq!(generation["state"], "ready");

    // Probing again once the server is gone: under --json the failure is one
    // JSON document, the error with the target's view as its details.
    llama.stop().await;
    let target = overview["targets"][0]["id"].as_str().unwrap().to_owned();
    let data = dir.path().to_owned();
    let (ok, probed, _) =
        tokio::task::spawn_blocking(move || run(lore(&data).args(["providers", "probe", &target, "--json"])))
            .await
            .unwrap();
    assert!(!ok);
    let failed: serde_json::Value =
        serde_json::from_str(&probed).unwrap_or_else(|_| panic!("one JSON document: {probed}"));
    assert_eq!(failed["error"]["code"], "probe_failed", "{failed}");
    assert_eq!(failed["details"], serde_json::Value::Null, "the details are inside the error: {failed}");
    assert_eq!(failed["error"]["details"]["model"], "smollm2", "{failed}");

    // A dead endpoint: the probe fails, the command fails with the code, nothing is stored.
    let data = dir.path().to_owned();
    let (ok, _, err) = tokio::task::spawn_blocking(move || {
        run(lore(&data).args([
            "providers",
            "add",
            "--kind",
            "custom",
            "--endpoint",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
        ]))
    })
    .await
    .unwrap();
    assert!(!ok);
    assert!(err.contains("probe_failed"), "{err}");
}

#[test]
fn schema_apply_creates_the_declared_tables_and_names_the_line_of_a_bad_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("app.graphql");
    std::fs::write(&file, "type Dog @table(database: \"dev\") {\n  id: ID @primaryKey\n  name: String\n}\n")
        .unwrap();
    let path = file.to_str().unwrap();
    let (ok, out, err) = run(lore(dir.path()).args(["schema", "apply", "--file", path, "--json"]));
    assert!(ok, "{err}");
    let applied: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(applied["created"], serde_json::json!(["dev.Dog"]));
    let (ok, out, _) = run(lore(dir.path()).args(["schema", "apply", "--file", path]));
    assert!(ok);
    assert!(out.contains("nothing changed"), "{out}");

    std::fs::write(&file, "type Dog @table(database: \"dev\") {\n  id: ID @primaryKey @nope\n}\n").unwrap();
    let (ok, _, err) = run(lore(dir.path()).args(["schema", "apply", "--file", path]));
    assert!(!ok);
    assert!(err.contains("invalid_schema") && err.contains("line 2"), "{err}");
    // Without a configured file or --file there is nothing to apply.
    let (ok, _, err) = run(lore(dir.path()).args(["schema", "apply"]));
    assert!(!ok);
    assert!(err.contains("appdb.schema"), "{err}");
}

#[test]
fn users_and_roles_are_managed_at_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, _, err) = run(lore(dir.path()).args([
        "roles",
        "add",
        "reader",
        "--permission",
        r#"{"dev": {"tables": {"dog": {"read": "yes"}}}}"#,
    ]));
    assert!(!ok);
    assert!(err.contains("invalid_permission") && err.contains("permission.dev.tables.dog.read"), "{err}");
    let (ok, out, err) = run(lore(dir.path()).args([
        "roles",
        "add",
        "reader",
        "--permission",
        r#"{"dev": {"tables": {"dog": {"read": true}}}}"#,
        "--json",
    ]));
    assert!(ok, "{err}");
    let role: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(role["permission"]["dev"]["tables"]["dog"]["read"], true);

    let (ok, _, err) = run(lore(dir.path()).args(["users", "add", "ada", "--role", "reader"]));
    assert!(ok, "{err}");
    let (ok, _, err) = run(lore(dir.path()).args([
        "keys",
        "create",
        "--name",
        "ada's",
        "--scope",
        "operations",
        "--user",
        "ada",
    ]));
    assert!(ok, "{err}");
    let (_, out, _) = run(lore(dir.path()).args(["users", "list", "--json"]));
    let users: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (&users[0]["username"], &users[0]["role"]["role"]),
        (&serde_json::json!("ada"), &serde_json::json!("reader"))
    );

    let (ok, _, err) = run(lore(dir.path()).args(["roles", "drop", "reader"]));
    assert!(!ok && err.contains("role_in_use"), "a role a user has stays: {err}");
    let (ok, _, _) = run(lore(dir.path()).args(["users", "alter", "ada", "--active", "false"]));
    assert!(ok);
    let (ok, _, _) = run(lore(dir.path()).args(["users", "drop", "ada"]));
    assert!(ok);
    let (_, out, _) = run(lore(dir.path()).args(["keys", "list", "--json"]));
    let keys: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(keys[0]["status"], "revoked", "dropping a user revokes its keys");
    let (ok, _, err) = run(lore(dir.path()).args(["roles", "drop", "reader"]));
    assert!(ok, "{err}");
    let (_, out, _) = run(lore(dir.path()).args(["roles", "list", "--json"]));
    assert_eq!(out.trim(), "[]");
}
