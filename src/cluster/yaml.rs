//! cassandra.yaml for a local node: a small base that every version since 4.0 accepts,
//! plus user overrides written as `key=value`, where `key` is a dotted path (`a.b.c`, with
//! numbers indexing lists: `seed_provider.0.class_name`) and `value` is YAML (`8`, `true`,
//! `[a, b]`, `{class_name: TrieMemtable}`, `2048MiB`).

use anyhow::{Context, Result, bail};
use serde_norway::{Mapping, Value};

/// What the base configuration of one node depends on.
pub struct BaseConfig<'a> {
    pub cluster_name: &'a str,
    pub address: &'a str,
    pub seeds: &'a str,
    pub native_port: u16,
    pub storage_port: u16,
    /// False for nodes of a cluster being created: there is nothing to stream to them.
    pub auto_bootstrap: bool,
}

/// The base cassandra.yaml of a node before overrides.
pub fn base(cfg: &BaseConfig) -> Value {
    let text = format!(
        r#"
cluster_name: "{cluster}"
num_tokens: 16
allocate_tokens_for_local_replication_factor: 3
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: SimpleSnitch
commitlog_sync: periodic
commitlog_sync_period: 10000ms
listen_address: {addr}
rpc_address: {addr}
native_transport_port: {native}
storage_port: {storage}
auto_bootstrap: {bootstrap}
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "{seeds}"
"#,
        cluster = cfg.cluster_name,
        addr = cfg.address,
        native = cfg.native_port,
        storage = cfg.storage_port,
        seeds = cfg.seeds,
        bootstrap = cfg.auto_bootstrap,
    );
    serde_norway::from_str(&text).expect("base cassandra.yaml is valid YAML")
}

/// One parsed `--set key=value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    pub path: Vec<String>,
    pub value: Value,
}

impl Override {
    pub fn parse(text: &str) -> Result<Override> {
        let Some((key, raw)) = text.split_once('=') else {
            bail!("--set '{text}' has no '=': write it as key=value, e.g. --set memtable_flush_writers=8");
        };
        let key = key.trim();
        if key.is_empty() || key.split('.').any(|s| s.is_empty()) {
            bail!("--set '{text}': the key must be a dotted path like memtable.configurations.default.class_name");
        }
        let value: Value = serde_norway::from_str(raw)
            .with_context(|| format!("--set '{text}': the value is not valid YAML (quote strings that contain ': ' or start with '{{' or '[')"))?;
        Ok(Override {
            path: key.split('.').map(str::to_string).collect(),
            value,
        })
    }

    /// Sets the value at this path, creating mappings on the way (and appending to a list
    /// when the index is its length).
    pub fn apply(&self, root: &mut Value) -> Result<()> {
        let dotted = self.path.join(".");
        let mut node = root;
        for (i, seg) in self.path.iter().enumerate() {
            let last = i + 1 == self.path.len();
            if node.is_null() {
                *node = Value::Mapping(Mapping::new());
            }
            node = match node {
                Value::Mapping(m) => {
                    let k = Value::String(seg.clone());
                    if !m.contains_key(&k) {
                        m.insert(k.clone(), Value::Null);
                    }
                    m.get_mut(&k).unwrap()
                }
                Value::Sequence(s) => {
                    let Ok(idx) = seg.parse::<usize>() else {
                        bail!(
                            "--set {dotted}: '{}' is a list, index it with a number (e.g. {}.0)",
                            self.path[..i].join("."),
                            self.path[..i].join(".")
                        );
                    };
                    if idx == s.len() {
                        s.push(Value::Null);
                    }
                    let len = s.len();
                    s.get_mut(idx)
                        .with_context(|| format!("--set {dotted}: index {idx} is past the end of a list of {len}"))?
                }
                _ => bail!(
                    "--set {dotted}: '{}' is a single value, not a mapping or list",
                    self.path[..i].join(".")
                ),
            };
            if last {
                *node = self.value.clone();
            }
        }
        Ok(())
    }
}

impl std::fmt::Display for Override {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = serde_norway::to_string(&self.value).unwrap_or_default();
        write!(f, "{}={}", self.path.join("."), v.trim_end())
    }
}

/// The node's cassandra.yaml text: base plus overrides, in order; for node `index` (from 1) of
/// a cluster of `nodes` being created, `Some((index, nodes))`, its tokens too
/// ([`spread_tokens`]).
pub fn render(base: Value, overrides: &[Override], new_cluster: Option<(u32, u32)>) -> Result<String> {
    let mut root = base;
    for o in overrides {
        o.apply(&mut root)?;
    }
    if let Some((index, nodes)) = new_cluster
        && nodes > 1
        && root.get("initial_token").is_none_or(Value::is_null)
    {
        let per_node = root.get("num_tokens").and_then(Value::as_u64).unwrap_or(16).max(1);
        let tokens = spread_tokens(index, nodes, per_node);
        let list: Vec<String> = tokens.iter().map(i64::to_string).collect();
        if let Value::Mapping(m) = &mut root {
            m.insert("initial_token".into(), Value::String(list.join(",")));
        }
    }
    Ok(serde_norway::to_string(&root)?)
}

/// The tokens of node `index` (from 1) of a new cluster of `nodes`, `per_node` each: the
/// Murmur3 ring cut into `nodes × per_node` equal slices, dealt out in turn, so every node
/// owns the same share. Left to itself, Cassandra draws a node's tokens at random until the
/// ring holds as many nodes as `allocate_tokens_for_local_replication_factor` (3): a new
/// cluster of three gets random tokens, and one measured owned 45, 29 and 26 % of the ring
/// (bench/RESULTS.md), which at RF 1 or 2 puts nearly twice the data on one node as on another.
pub fn spread_tokens(index: u32, nodes: u32, per_node: u64) -> Vec<i64> {
    let slices = i128::from(nodes) * i128::from(per_node);
    let width = (1i128 << 64) / slices;
    (0..i128::from(per_node))
        .map(|k| {
            let slice = k * i128::from(nodes) + i128::from(index - 1);
            (i128::from(i64::MIN) + slice * width) as i64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> Value {
        base(&BaseConfig {
            cluster_name: "c",
            address: "127.0.0.2",
            seeds: "127.0.0.1:7000",
            native_port: 9042,
            storage_port: 7000,
            auto_bootstrap: false,
        })
    }

    fn get<'a>(v: &'a Value, path: &str) -> &'a Value {
        path.split('.').fold(v, |v, s| match s.parse::<usize>() {
            Ok(i) if v.is_sequence() => &v[i],
            _ => &v[s],
        })
    }

    #[test]
    fn base_names_the_node_and_its_seeds() {
        let v = cfg();
        assert_eq!(get(&v, "listen_address").as_str(), Some("127.0.0.2"));
        assert_eq!(
            get(&v, "seed_provider.0.parameters.0.seeds").as_str(),
            Some("127.0.0.1:7000")
        );
    }

    #[test]
    fn overrides_set_scalars_with_yaml_types() {
        let mut v = cfg();
        Override::parse("memtable_flush_writers=8")
            .unwrap()
            .apply(&mut v)
            .unwrap();
        Override::parse("memtable_allocation_type=offheap_objects")
            .unwrap()
            .apply(&mut v)
            .unwrap();
        Override::parse("auto_snapshot=false").unwrap().apply(&mut v).unwrap();
        Override::parse("memtable_heap_space=2048MiB")
            .unwrap()
            .apply(&mut v)
            .unwrap();
        assert_eq!(get(&v, "memtable_flush_writers").as_u64(), Some(8));
        assert_eq!(get(&v, "memtable_allocation_type").as_str(), Some("offheap_objects"));
        assert_eq!(get(&v, "auto_snapshot").as_bool(), Some(false));
        assert_eq!(get(&v, "memtable_heap_space").as_str(), Some("2048MiB"));
    }

    #[test]
    fn overrides_create_nested_keys_and_index_lists() {
        let mut v = cfg();
        for s in [
            "memtable.configurations.trie.class_name=TrieMemtable",
            "memtable.configurations.trie.parameters.shards=64",
            "memtable.configurations.default.inherits=trie",
            "seed_provider.0.parameters.0.seeds=127.0.0.9:7000",
            "data_file_directories=[/a, /b]",
            "data_file_directories.2=/c",
        ] {
            Override::parse(s).unwrap().apply(&mut v).unwrap();
        }
        assert_eq!(
            get(&v, "memtable.configurations.trie.class_name").as_str(),
            Some("TrieMemtable")
        );
        assert_eq!(
            get(&v, "memtable.configurations.trie.parameters.shards").as_u64(),
            Some(64)
        );
        assert_eq!(
            get(&v, "memtable.configurations.default.inherits").as_str(),
            Some("trie")
        );
        assert_eq!(
            get(&v, "seed_provider.0.parameters.0.seeds").as_str(),
            Some("127.0.0.9:7000")
        );
        assert_eq!(get(&v, "data_file_directories").as_sequence().unwrap().len(), 3);
        assert_eq!(get(&v, "data_file_directories.2").as_str(), Some("/c"));
    }

    #[test]
    fn flow_mappings_replace_whole_subtrees() {
        let mut v = cfg();
        Override::parse("memtable={configurations: {default: {class_name: TrieMemtable}}}")
            .unwrap()
            .apply(&mut v)
            .unwrap();
        assert_eq!(
            get(&v, "memtable.configurations.default.class_name").as_str(),
            Some("TrieMemtable")
        );
    }

    #[test]
    fn bad_overrides_say_what_is_wrong() {
        let err = |s: &str| match Override::parse(s) {
            Err(e) => e.to_string(),
            Ok(o) => o.apply(&mut cfg()).unwrap_err().to_string(),
        };
        assert!(err("memtable_flush_writers").contains("no '='"));
        assert!(err("a..b=1").contains("dotted path"));
        assert!(err("x=[unclosed").contains("not valid YAML"));
        assert!(err("cluster_name.sub=1").contains("single value"));
        assert!(err("seed_provider.first=1").contains("index it with a number"));
        assert!(err("seed_provider.5=1").contains("past the end"));
    }

    #[test]
    fn rendered_yaml_reads_back() {
        let text = render(cfg(), &[Override::parse("concurrent_writes=64").unwrap()], None).unwrap();
        let back: Value = serde_norway::from_str(&text).unwrap();
        assert_eq!(back["concurrent_writes"].as_u64(), Some(64));
        assert_eq!(back["cluster_name"].as_str(), Some("c"));
    }

    #[test]
    fn a_new_clusters_nodes_share_the_ring_evenly_and_never_a_token() {
        let all: Vec<i64> = (1..=3).flat_map(|i| spread_tokens(i, 3, 16)).collect();
        let mut sorted = all.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 48, "no token twice");
        assert_eq!(sorted[0], i64::MIN);
        // Dealt in turn: consecutive tokens on the ring belong to nodes 1, 2, 3, 1, ...
        let owner = |t: i64| (1..=3).find(|&i| spread_tokens(i, 3, 16).contains(&t)).unwrap();
        let owners: Vec<u32> = sorted.iter().take(6).map(|&t| owner(t)).collect();
        assert_eq!(owners, [1, 2, 3, 1, 2, 3]);
        let gaps: Vec<i128> = sorted.windows(2).map(|w| i128::from(w[1]) - i128::from(w[0])).collect();
        assert!(gaps.iter().all(|&g| g == gaps[0]), "equal slices");

        // Written only for a new cluster of several nodes, as many as num_tokens says.
        let tokens = |o: &[&str], c| {
            let o: Vec<Override> = o.iter().map(|s| Override::parse(s).unwrap()).collect();
            let back: Value = serde_norway::from_str(&render(cfg(), &o, c).unwrap()).unwrap();
            back["initial_token"].as_str().map(|t| t.split(',').count())
        };
        assert_eq!(tokens(&[], Some((2, 3))), Some(16));
        assert_eq!(tokens(&["num_tokens=4"], Some((2, 3))), Some(4));
        assert_eq!(tokens(&[], Some((1, 1))), None);
        assert_eq!(tokens(&[], None), None);
        // A user's own tokens are kept.
        assert_eq!(tokens(&["num_tokens=1", "initial_token='0'"], Some((1, 3))), Some(1));
    }
}
