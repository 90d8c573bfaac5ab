//! The master key and what is derived from it.
//!
//! The master key comes from `master_key` (`LORE_MASTER_KEY`, base64 of 32
//! bytes) or from `master.key` in the data directory, created with mode 0600 on
//! first start. Sub-keys are derived with HKDF-SHA256 so that one secret can
//! serve several purposes without reuse.

use std::io::Write;
use std::path::Path;

use base64::Engine as _;
use hkdf::Hkdf;
use rand::RngCore;
use sha2::Sha256;

use crate::{Error, Result, Settings};

const MASTER_KEY_FILE: &str = "master.key";

/// Keys derived from the master key. Never logged, never serialised.
pub struct Keys {
    /// HMAC key for session tokens.
    pub session_signing: [u8; 32],
    /// AES-256-GCM key for provider API keys at rest.
    provider_sealing: [u8; 32],
}

impl Keys {
    pub fn load_or_create(settings: &Settings) -> Result<Self> {
        let master = match &settings.master_key {
            Some(encoded) => decode_master(encoded.expose())
                .map_err(|why| Error::Config(format!("master_key (LORE_MASTER_KEY) {why}")))?,
            None => load_or_create_file(&settings.data_dir.join(MASTER_KEY_FILE))?,
        };
        Ok(Self::derive(&master))
    }

    fn derive(master: &[u8; 32]) -> Self {
        let hkdf = Hkdf::<Sha256>::new(Some(b"lore"), master);
        let mut session_signing = [0u8; 32];
        let mut provider_sealing = [0u8; 32];
        // 32 bytes is far below HKDF-SHA256's output limit, so expand cannot fail.
        let _ = hkdf.expand(b"session-signing-v1", &mut session_signing);
        let _ = hkdf.expand(b"provider-keys-v1", &mut provider_sealing);
        Self { session_signing, provider_sealing }
    }

    /// Seals a provider API key: base64(nonce ‖ AES-256-GCM ciphertext), a
    /// fresh random nonce each time.
    pub fn seal(&self, plaintext: &str) -> Result<String> {
        use aes_gcm::aead::{Aead, KeyInit};
        let cipher = aes_gcm::Aes256Gcm::new(&self.provider_sealing.into());
        let mut nonce = [0u8; 12];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let sealed = cipher
            .encrypt(&nonce.into(), plaintext.as_bytes())
            .map_err(|_| Error::Internal("sealing a provider key failed".into()))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        Ok(base64::engine::general_purpose::STANDARD.encode(out))
    }

    /// Opens what [`Keys::seal`] made. Fails (without saying more) if it was
    /// sealed under another master key or altered.
    pub fn open(&self, sealed: &str) -> Result<crate::settings::Secret> {
        use aes_gcm::aead::{Aead, KeyInit};
        let unreadable =
            || Error::Config("a stored provider key cannot be opened with this master key".into());
        let bytes = base64::engine::general_purpose::STANDARD.decode(sealed).map_err(|_| unreadable())?;
        if bytes.len() < 12 + 16 {
            return Err(unreadable());
        }
        let (nonce, ciphertext) = bytes.split_at(12);
        let cipher = aes_gcm::Aes256Gcm::new(&self.provider_sealing.into());
        let nonce = <[u8; 12]>::try_from(nonce).map_err(|_| unreadable())?;
        let plain = cipher.decrypt(&nonce.into(), ciphertext).map_err(|_| unreadable())?;
        String::from_utf8(plain).map(crate::settings::Secret::new).map_err(|_| unreadable())
    }
}

fn decode_master(encoded: &str) -> std::result::Result<[u8; 32], String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| "is not valid base64".to_owned())?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| format!("must be 32 bytes, not {}", bytes.len()))
}

fn load_or_create_file(path: &Path) -> Result<[u8; 32]> {
    let io = |context: String| move |source| Error::Io { context, source };
    if path.exists() {
        let encoded = std::fs::read_to_string(path).map_err(io(format!("reading {}", path.display())))?;
        return decode_master(&encoded).map_err(|why| Error::Config(format!("{} {why}", path.display())));
    }
    let mut master = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut master);
    let encoded = base64::engine::general_purpose::STANDARD.encode(master);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(io(format!("creating {}", path.display())))?;
    file.write_all(encoded.as_bytes()).map_err(io(format!("writing {}", path.display())))?;
    tracing::info!(path = %path.display(), "created a new master key");
    Ok(master)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_file_is_created_private_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings { data_dir: dir.path().to_owned(), ..Settings::default() };
        let first = Keys::load_or_create(&settings).unwrap();
        let second = Keys::load_or_create(&settings).unwrap();
        assert_eq!(first.session_signing, second.session_signing);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(MASTER_KEY_FILE)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn provider_keys_are_sealed_with_fresh_nonces_and_open_only_under_their_master_key() {
        let keys = Keys::derive(&[7u8; 32]);
        let first = keys.seal("sk-live-123").unwrap();
        let second = keys.seal("sk-live-123").unwrap();
        assert_ne!(first, second, "a fresh nonce each time");
        assert!(!first.contains("sk-live"));
        assert_eq!(keys.open(&first).unwrap().expose(), "sk-live-123");
        let other = Keys::derive(&[8u8; 32]);
        assert!(other.open(&first).is_err());
        let mut tampered = base64::engine::general_purpose::STANDARD.decode(&first).unwrap();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        assert!(keys.open(&base64::engine::general_purpose::STANDARD.encode(tampered)).is_err());
    }

    #[test]
    fn a_malformed_master_key_is_a_config_error() {
        let settings =
            Settings { master_key: Some(crate::settings::Secret::new("c2hvcnQ=")), ..Settings::default() };
        let err = Keys::load_or_create(&settings).err().unwrap();
        assert!(err.to_string().contains("must be 32 bytes"), "{err}");
    }
}
