//! Build caches kept across builds in `.attnbook/cache/render/`: one JSON file per kind of work
//! (formulas, highlighted code, citations, the search index), entries keyed by a content hash of
//! everything that decides the result. (The experiment cache beside it, one file per chapter
//! slug, is the lab stage's.)
//!
//! A cache only ever costs speed: a missing, unreadable or stale file is an empty cache, and a
//! failed write is ignored. Each save keeps only the entries this build used, so a file holds
//! the site as it is now and does not grow with every edit.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Results keyed by content hash, loaded from and saved to one JSON file.
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
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
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
        let Ok(json) = serde_json::to_vec(&self.entries) else {
            return;
        };
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
            if let Ok(mut tmp) = tempfile::NamedTempFile::new_in(dir)
                && std::io::Write::write_all(&mut tmp, &json).is_ok()
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
        .join(format!("{kind}.json"))
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
    fn keys_separate_their_parts() {
        assert_ne!(key(&[b"ab", b"c"]), key(&[b"a", b"bc"]));
        assert_eq!(key(&[b"x"]), key(&[b"x"]));
    }
}
