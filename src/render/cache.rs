//! Build caches kept across builds in `.attnbook/cache/render/`: one file per kind of work
//! (formulas, highlighted code, citations, the search index), entries keyed by a content hash of
//! everything that decides the result. The files are postcard (length-prefixed strings read
//! back with one copy; as JSON, with the HTML's quotes escaped, reading them was 8 % of a
//! no-change build). (The experiment cache beside it, one file per chapter
//! slug, is the lab stage's.)
//!
//! A cache only ever costs speed: a missing, unreadable or stale file is an empty cache, and a
//! failed write is ignored. Each save keeps only the entries this build used, so a file holds
//! the site as it is now and does not grow with every edit.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// What starts every cache file: a file without it (or of another version) is an empty cache.
const CACHE_MAGIC: &[u8; 8] = b"attnbkc1";

/// Results keyed by content hash, loaded from and saved to one file.
#[derive(Debug)]
pub struct Cache<V> {
    path: Option<PathBuf>,
    entries: BTreeMap<String, V>,
    used: BTreeSet<String>,
    dirty: bool,
}

impl<V> Default for Cache<V> {
    fn default() -> Self {
        Cache {
            path: None,
            entries: BTreeMap::new(),
            used: BTreeSet::new(),
            dirty: false,
        }
    }
}

impl<V: Serialize + DeserializeOwned + Clone> Cache<V> {
    /// Loads the cache file (a missing or unreadable one is an empty cache).
    pub fn load(path: PathBuf) -> Self {
        let entries = std::fs::read(&path)
            .ok()
            .and_then(|bytes| {
                let body = bytes.strip_prefix(CACHE_MAGIC)?;
                postcard::from_bytes(body).ok()
            })
            .unwrap_or_default();
        Cache {
            path: Some(path),
            entries,
            ..Cache::default()
        }
    }

    /// A cache that lives only in memory.
    pub fn in_memory() -> Self {
        Cache::default()
    }

    /// The entry for `key`, marking it used.
    pub fn get(&mut self, key: &str) -> Option<&V> {
        let found = self.entries.get(key);
        if found.is_some() && !self.used.contains(key) {
            self.used.insert(key.to_string());
        }
        found
    }

    /// True if `key` is cached (without marking it used).
    pub fn contains(&self, key: &str) -> bool {
        self.entries.contains_key(key)
    }

    /// Adds a freshly computed entry.
    pub fn insert(&mut self, key: String, value: V) {
        self.used.insert(key.clone());
        self.entries.insert(key, value);
        self.dirty = true;
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Writes the entries this build used, atomically, if that changes the file.
    pub fn save(&mut self) {
        let Some(path) = self.path.clone() else {
            return;
        };
        if !self.dirty && self.used.len() == self.entries.len() {
            return;
        }
        let used = std::mem::take(&mut self.used);
        self.entries.retain(|key, _| used.contains(key));
        self.used = used;
        let Ok(body) = postcard::to_stdvec(&self.entries) else {
            return;
        };
        let bytes = [CACHE_MAGIC.as_slice(), &body].concat();
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
            if let Ok(mut tmp) = tempfile::NamedTempFile::new_in(dir)
                && std::io::Write::write_all(&mut tmp, &bytes).is_ok()
                && tmp.persist(&path).is_ok()
            {
                self.dirty = false;
            }
        }
    }
}

/// Where the cache of one `kind` of work lives for the site at `root`.
pub fn file(root: &Path, kind: &str) -> PathBuf {
    root.join(".attnbook/cache/render")
        .join(format!("{kind}.cache"))
}

/// A hex content hash of `parts`, each length-prefixed so no two different lists collide by
/// concatenation.
pub fn key(parts: &[&[u8]]) -> String {
    let mut hasher = blake3::Hasher::new();
    for part in parts {
        hasher.update(&(part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hasher.finalize().to_hex().to_string()
}

/// A content hash built from parts, for keys whose inputs are structured values: each byte part
/// is length-prefixed and each JSON part is self-delimiting, so no two different lists of parts
/// share a key.
pub struct Key(blake3::Hasher);

impl Key {
    /// A key for one `kind` of result (the kind is part of the hash).
    pub fn new(kind: &str) -> Self {
        let mut key = Key(blake3::Hasher::new());
        key.bytes(kind.as_bytes());
        key
    }

    /// Adds raw bytes.
    pub fn bytes(&mut self, part: &[u8]) -> &mut Self {
        self.0.update(&(part.len() as u64).to_le_bytes());
        self.0.update(part);
        self
    }

    /// Adds a value as the JSON a template would see of it: what serialises the same renders the
    /// same. (A value that cannot be serialised cannot reach a template either; it adds a marker.)
    pub fn json<T: Serialize + ?Sized>(&mut self, value: &T) -> &mut Self {
        self.0.update(b"{json}");
        let outer = KEYING.replace(true);
        let written = serde_json::to_writer(&mut self.0, value);
        KEYING.set(outer);
        if written.is_err() {
            self.0.update(b"{unserialisable}");
        }
        self.0.update(b"{/json}");
        self
    }

    /// The hex digest.
    pub fn finish(&self) -> String {
        self.0.finalize().to_hex().to_string()
    }
}

thread_local! {
    /// Set while a [`Key`] serialises a value: [`Digested`] text then writes its digest.
    static KEYING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Text too large to hash as JSON on every build (a chapter's body, several hundred
/// kilobytes): a template gets the text, a [`Key`] the digest of its bytes, computed once.
#[derive(Debug, Clone, Copy)]
pub struct Digested<'a> {
    text: &'a str,
    digest: &'a str,
}

impl<'a> Digested<'a> {
    /// `text` with `digest`, the hash of its bytes ([`digest`]).
    pub fn new(text: &'a str, digest: &'a str) -> Self {
        Digested { text, digest }
    }
}

impl Serialize for Digested<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if KEYING.get() {
            serializer.serialize_str(self.digest)
        } else {
            serializer.serialize_str(self.text)
        }
    }
}

/// The digest [`Digested`] text is keyed by.
pub fn digest(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

/// Large results (whole pages) kept one file per entry in a directory, so a build reads only
/// the entries it uses: `<dir>/<key>` holds a header with the length of the bytes, then the
/// bytes; an entry is written to a temporary file and renamed into place, and one whose header
/// does not match its length (cut short, truncated or grown by hand) is a miss. Safe to use
/// from several threads; [`Blobs::prune`] removes what this build did not use.
#[derive(Debug, Default)]
pub struct Blobs {
    dir: Option<PathBuf>,
    used: std::sync::Mutex<BTreeSet<String>>,
}

impl Blobs {
    /// The blobs kept in `dir` (created when the first entry is stored).
    pub fn open(dir: PathBuf) -> Self {
        Blobs {
            dir: Some(dir),
            used: Default::default(),
        }
    }

    /// No store: every lookup misses, nothing is written.
    pub fn off() -> Self {
        Blobs::default()
    }

    /// The bytes stored under `key`, or those `make` computes (then stored). An error of `make`
    /// is passed on and nothing is stored.
    pub fn get_or_make<E>(
        &self,
        key: &str,
        make: impl FnOnce() -> Result<Vec<u8>, E>,
    ) -> Result<Vec<u8>, E> {
        let Some(dir) = &self.dir else {
            return make();
        };
        self.mark(key);
        let path = dir.join(key);
        if let Some(bytes) = read_checked(&path) {
            return Ok(bytes);
        }
        let bytes = make()?;
        write_checked(dir, &path, &bytes);
        Ok(bytes)
    }

    /// Like [`Blobs::get_or_make`], but a stored entry is not read: it is returned as
    /// [`Output::Kept`], to be read only if the output tree does not already hold it.
    pub fn output_or_make<E>(
        &self,
        key: &str,
        make: impl FnOnce() -> Result<Vec<u8>, E>,
    ) -> Result<Output, E> {
        let Some(dir) = &self.dir else {
            return Ok(Output::from(make()?));
        };
        self.mark(key);
        let path = dir.join(key);
        if let Some(len) = stored_length(&path) {
            return Ok(Output::Kept {
                key: key.to_string(),
                path,
                len,
            });
        }
        let bytes = make()?;
        write_checked(dir, &path, &bytes);
        Ok(Output::Made {
            bytes,
            key: Some(key.to_string()),
        })
    }

    /// Keeps the entry under `key` through [`Blobs::prune`] without reading it: an entry a
    /// later build may need although this one did not (a part of a page read back whole).
    pub fn keep(&self, key: &str) {
        self.mark(key);
    }

    fn mark(&self, key: &str) {
        if let Ok(mut used) = self.used.lock() {
            used.insert(key.to_string());
        }
    }

    /// Removes every stored entry this build did not use, so the directory holds the site as
    /// it is now and does not grow with every edit.
    pub fn prune(&self) {
        let (Some(dir), Ok(used)) = (&self.dir, self.used.lock()) else {
            return;
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name();
            if !name.to_str().is_some_and(|n| used.contains(n)) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Bytes of an output file: made by this build, or kept in a [`Blobs`] store by an earlier
/// one and read only when they must be written (a recycled output tree mostly holds them
/// already: see `site::emit`). A key names bytes that only those inputs make, so two outputs
/// with one key are the same bytes.
#[derive(Debug)]
pub enum Output {
    /// Bytes in memory, and the key they are stored under, if they are.
    Made {
        /// The bytes.
        bytes: Vec<u8>,
        /// Their key in the store.
        key: Option<String>,
    },
    /// A stored entry, not read yet.
    Kept {
        /// Its key in the store.
        key: String,
        /// Its file.
        path: PathBuf,
        /// The length of its bytes.
        len: u64,
    },
    /// Bytes joined from parts in order (a page assembled from stored pieces: see
    /// `render::print`), each read only when the whole must be written.
    Joined {
        /// The parts, in order.
        parts: Vec<Output>,
        /// A key made of the parts' keys, when every part has one.
        key: Option<String>,
    },
}

impl From<Vec<u8>> for Output {
    fn from(bytes: Vec<u8>) -> Self {
        Output::Made { bytes, key: None }
    }
}

impl Output {
    /// The key of the bytes in the store, if they are stored.
    pub fn key(&self) -> Option<&str> {
        match self {
            Output::Made { key, .. } | Output::Joined { key, .. } => key.as_deref(),
            Output::Kept { key, .. } => Some(key),
        }
    }

    /// `parts` joined in order, keyed by their keys (no key when one of them has none).
    pub fn joined(parts: Vec<Output>) -> Output {
        let mut key = Key::new("joined output");
        let mut keyed = true;
        for part in &parts {
            match part.key() {
                Some(k) => {
                    key.bytes(k.as_bytes());
                }
                // A part without a key is known by its bytes (the small pieces between
                // stored ones).
                None => match part {
                    Output::Made { bytes, .. } => {
                        key.bytes(bytes);
                    }
                    _ => keyed = false,
                },
            }
        }
        Output::Joined {
            parts,
            key: keyed.then(|| key.finish()),
        }
    }

    /// The number of bytes.
    pub fn len(&self) -> u64 {
        match self {
            Output::Made { bytes, .. } => bytes.len() as u64,
            Output::Kept { len, .. } => *len,
            Output::Joined { parts, .. } => parts.iter().map(Output::len).sum(),
        }
    }

    /// True for no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes, read from the store for a kept entry (an error if it is gone or no longer
    /// whole).
    pub fn into_bytes(self) -> std::io::Result<Vec<u8>> {
        match self {
            Output::Made { bytes, .. } => Ok(bytes),
            Output::Kept { path, len, .. } => read_checked(&path)
                .filter(|bytes| bytes.len() as u64 == len)
                .ok_or_else(|| changed_during_build(&path)),
            Output::Joined { parts, .. } => {
                let len = parts.iter().map(Output::len).sum::<u64>();
                let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
                for part in parts {
                    bytes.extend_from_slice(&part.into_bytes()?);
                }
                Ok(bytes)
            }
        }
    }

    /// Writes the bytes to `to`, part after part; a stored entry is copied from its file (by
    /// the kernel, where it can) rather than read into memory first.
    pub fn write_to(self, to: &mut std::fs::File) -> std::io::Result<()> {
        match self {
            Output::Made { bytes, .. } => std::io::Write::write_all(to, &bytes),
            Output::Kept { path, len, .. } => copy_checked(&path, len, to),
            Output::Joined { parts, .. } => {
                parts.into_iter().try_for_each(|part| part.write_to(to))
            }
        }
    }
}

/// The error for a stored entry that is gone or no longer whole when it is read.
fn changed_during_build(path: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!(
            "the stored page {} changed during the build",
            path.display()
        ),
    )
}

/// Copies the bytes of the stored blob at `path` to `to`, checking, as [`read_checked`] does,
/// that it is whole and holds `len` bytes.
fn copy_checked(path: &Path, len: u64, to: &mut std::fs::File) -> std::io::Result<()> {
    use std::io::Read;
    let changed = || changed_during_build(path);
    let mut file = std::fs::File::open(path)?;
    if blob_length(&mut file) != Some(len) {
        return Err(changed());
    }
    let copied = std::io::copy(&mut file.take(len), to)?;
    if copied == len {
        Ok(())
    } else {
        Err(changed())
    }
}

/// The length of the bytes of the whole stored blob at `path`, from its header and its
/// size, without reading the bytes.
fn stored_length(path: &Path) -> Option<u64> {
    blob_length(&mut std::fs::File::open(path).ok()?)
}

/// The length of the blob's bytes from the header of `file` (left just after the header), if
/// the file is a whole blob of that length.
fn blob_length(file: &mut std::fs::File) -> Option<u64> {
    use std::io::Read;
    let mut header = [0u8; BLOB_MAGIC.len() + 8];
    file.read_exact(&mut header).ok()?;
    if header[..BLOB_MAGIC.len()] != BLOB_MAGIC[..] {
        return None;
    }
    let length = u64::from_le_bytes(header[BLOB_MAGIC.len()..].try_into().ok()?);
    let size = file.metadata().ok()?.len();
    (size == header.len() as u64 + length).then_some(length)
}

/// What starts every stored blob, before the length of its bytes.
const BLOB_MAGIC: &[u8; 8] = b"attnbk1\n";

/// A blob written whole (they are renamed into place, so a cut-short write never shows under
/// its key) that has its full length; a file that is anything else is a miss. The bytes are
/// not hashed again: that would cost a no-change build more than a tenth of its budget.
fn read_checked(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).ok()?;
    let length = blob_length(&mut file)?;
    // Read straight into a buffer of the right size (no copy to drop the header after).
    let mut bytes = Vec::with_capacity(usize::try_from(length).ok()?);
    file.take(length).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 == length).then_some(bytes)
}

fn write_checked(dir: &Path, path: &Path, bytes: &[u8]) {
    let _ = std::fs::create_dir_all(dir);
    if let Ok(mut tmp) = tempfile::NamedTempFile::new_in(dir) {
        let mut header = BLOB_MAGIC.to_vec();
        header.extend((bytes.len() as u64).to_le_bytes());
        let written = std::io::Write::write_all(&mut tmp, &header)
            .and_then(|()| std::io::Write::write_all(&mut tmp, bytes));
        if written.is_ok() {
            let _ = tmp.persist(path);
        }
    }
}

/// Which generator binary is running: its version, path, size and modification time. Results
/// that depend on the generator's code (whole pages) are keyed by it, so a rebuilt or another
/// binary renders afresh instead of trusting what an older one stored; reading the metadata
/// costs microseconds, where hashing the binary would cost a no-change build its budget.
pub fn binary_identity() -> &'static str {
    static IDENTITY: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        let exe = std::env::current_exe().ok();
        let meta = exe.as_ref().and_then(|p| std::fs::metadata(p).ok());
        let modified = meta
            .as_ref()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos());
        format!(
            "attnbook {} {:?} {:?} {:?}",
            env!("CARGO_PKG_VERSION"),
            exe,
            meta.map(|m| m.len()),
            modified
        )
    });
    &IDENTITY
}

/// Texts as one blob: each text's length, then its bytes ([`split_texts`] reads it back).
pub fn join_texts(texts: &[String]) -> Vec<u8> {
    let mut out = Vec::with_capacity(texts.iter().map(|t| t.len() + 8).sum());
    for text in texts {
        out.extend((text.len() as u64).to_le_bytes());
        out.extend(text.as_bytes());
    }
    out
}

/// The texts of a [`join_texts`] blob, or `None` if it is not one.
pub fn split_texts(mut bytes: &[u8]) -> Option<Vec<String>> {
    let mut texts = Vec::new();
    while !bytes.is_empty() {
        let (length, rest) = bytes.split_first_chunk::<8>()?;
        let length = usize::try_from(u64::from_le_bytes(*length)).ok()?;
        let text = rest.get(..length)?;
        texts.push(String::from_utf8(text.to_vec()).ok()?);
        bytes = &rest[length..];
    }
    Some(texts)
}

/// Where the page store of the site at `root` lives.
pub fn pages_dir(root: &Path) -> PathBuf {
    root.join(".attnbook/cache/render/pages")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_survive_a_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        let mut cache: Cache<String> = Cache::load(path.clone());
        assert!(cache.is_empty());
        cache.insert(key(&[b"a"]), "A".into());
        cache.save();
        let mut again: Cache<String> = Cache::load(path);
        assert_eq!(again.get(&key(&[b"a"])).map(String::as_str), Some("A"));
        assert!(again.get(&key(&[b"b"])).is_none());
    }

    #[test]
    fn a_save_keeps_only_the_entries_this_build_used() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        let mut first: Cache<u32> = Cache::load(path.clone());
        first.insert("old".into(), 1);
        first.insert("kept".into(), 2);
        first.save();
        let mut second: Cache<u32> = Cache::load(path.clone());
        assert_eq!(second.get("kept"), Some(&2));
        second.insert("new".into(), 3);
        second.save();
        let third: Cache<u32> = Cache::load(path);
        assert!(third.contains("kept") && third.contains("new"));
        assert!(!third.contains("old"), "an unused entry was kept");
        assert_eq!(third.len(), 2);
    }

    #[test]
    fn a_broken_file_is_an_empty_cache() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        std::fs::write(&path, "{not json").unwrap();
        let cache: Cache<String> = Cache::load(path);
        assert!(cache.is_empty());
    }

    #[test]
    fn a_blob_is_made_once_then_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::open(dir.path().join("pages"));
        let mut made = 0;
        let mut make = || {
            made += 1;
            Ok::<_, ()>(b"<html>page</html>".to_vec())
        };
        assert_eq!(
            blobs.get_or_make("k", &mut make).unwrap(),
            b"<html>page</html>"
        );
        let again = Blobs::open(dir.path().join("pages"));
        assert_eq!(
            again.get_or_make("k", &mut make).unwrap(),
            b"<html>page</html>"
        );
        assert_eq!(made, 1, "the second build read the stored page");
        let failed = again.get_or_make("other", || Err::<Vec<u8>, _>("template error"));
        assert_eq!(failed, Err("template error"));
        assert!(
            !dir.path().join("pages/other").exists(),
            "a failure is not stored"
        );
    }

    #[test]
    fn a_damaged_blob_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let pages = dir.path().join("pages");
        Blobs::open(pages.clone())
            .get_or_make("k", || Ok::<_, ()>(b"complete page".to_vec()))
            .unwrap();
        // Cut short, grown, replaced by hand, emptied.
        let stored = std::fs::read(pages.join("k")).unwrap();
        for damaged in [
            stored[..stored.len() - 3].to_vec(),
            [stored.as_slice(), b"more"].concat(),
            b"page".to_vec(),
            Vec::new(),
        ] {
            std::fs::write(pages.join("k"), damaged).unwrap();
            let bytes = Blobs::open(pages.clone())
                .get_or_make("k", || Ok::<_, ()>(b"complete page".to_vec()))
                .unwrap();
            assert_eq!(bytes, b"complete page");
        }
        assert_eq!(
            std::fs::read(pages.join("k")).unwrap(),
            stored,
            "rewritten whole"
        );
    }

    #[test]
    fn pruning_keeps_only_what_this_build_used() {
        let dir = tempfile::tempdir().unwrap();
        let pages = dir.path().join("pages");
        let first = Blobs::open(pages.clone());
        for key in ["old", "kept"] {
            first
                .get_or_make(key, || Ok::<_, ()>(key.as_bytes().to_vec()))
                .unwrap();
        }
        let second = Blobs::open(pages.clone());
        second
            .get_or_make("kept", || Ok::<_, ()>(Vec::new()))
            .unwrap();
        second.prune();
        assert!(pages.join("kept").exists());
        assert!(!pages.join("old").exists(), "an unused page was kept");
    }

    #[test]
    fn without_a_store_every_lookup_computes() {
        let blobs = Blobs::off();
        let mut made = 0;
        for _ in 0..2 {
            blobs
                .get_or_make("k", || {
                    made += 1;
                    Ok::<_, ()>(Vec::new())
                })
                .unwrap();
        }
        assert_eq!(made, 2);
    }

    #[test]
    fn digested_text_is_whole_for_templates_and_its_digest_in_keys() {
        let text = "<p>a long body</p>";
        let digest = digest(text);
        let view = Digested::new(text, &digest);
        assert_eq!(serde_json::to_string(&view).unwrap(), format!("{text:?}"));
        assert_eq!(
            Key::new("page").json(&view).finish(),
            Key::new("page").json(&digest).finish()
        );
        let other = super::digest("<p>another body</p>");
        assert_ne!(
            Key::new("page").json(&view).finish(),
            Key::new("page").json(&Digested::new(text, &other)).finish()
        );
    }

    #[test]
    fn json_keys_follow_the_value() {
        let of = |v: serde_json::Value| Key::new("page").json(&v).finish();
        assert_eq!(
            of(serde_json::json!({"a": 1})),
            of(serde_json::json!({"a": 1}))
        );
        assert_ne!(
            of(serde_json::json!({"a": 1})),
            of(serde_json::json!({"a": 2}))
        );
        assert_ne!(
            Key::new("page").json("ab").json("c").finish(),
            Key::new("page").json("a").json("bc").finish()
        );
        assert_ne!(
            Key::new("page").json("x").finish(),
            Key::new("feed").json("x").finish()
        );
    }

    #[test]
    fn texts_survive_a_blob() {
        let texts = vec!["<p>注意力</p>".to_string(), String::new(), "h".into()];
        assert_eq!(split_texts(&join_texts(&texts)), Some(texts.clone()));
        assert_eq!(split_texts(&[]), Some(Vec::new()));
        let blob = join_texts(&texts);
        assert_eq!(split_texts(&blob[..blob.len() - 1]), None, "cut short");
        assert_eq!(split_texts(&blob[..5]), None, "a length cut short");
    }

    #[test]
    fn keys_separate_their_parts() {
        assert_ne!(key(&[b"ab", b"c"]), key(&[b"a", b"bc"]));
        assert_eq!(key(&[b"x"]), key(&[b"x"]));
    }
}
