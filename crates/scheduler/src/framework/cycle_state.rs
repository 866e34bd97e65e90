//! `CycleState`: what plugins compute in one scheduling cycle and pass on to their later
//! extension points (PreFilter → Filter, PreScore → Score), by key. Cloned for preemption's
//! what-if evaluations, so what is stored must be cloneable.

use std::any::Any;

/// Something a plugin stores for the rest of the cycle.
pub trait StateData: Any + Send + Sync {
    fn clone_data(&self) -> Box<dyn StateData>;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Any + Send + Sync + Clone> StateData for T {
    fn clone_data(&self) -> Box<dyn StateData> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Whether two keys are the same: the same static string is usually the same pointer.
fn same(a: &str, b: &str) -> bool {
    (a.as_ptr() == b.as_ptr() && a.len() == b.len()) || a == b
}

/// A few plugin names (a cycle skips a handful at most): a list, looked up without hashing,
/// since Filter asks once per plugin per node.
#[derive(Clone, Debug, Default)]
pub struct NameSet(Vec<&'static str>);

impl NameSet {
    pub fn insert(&mut self, name: &'static str) {
        if !self.contains(name) {
            self.0.push(name);
        }
    }

    pub fn contains(&self, name: &str) -> bool {
        self.0.iter().any(|n| same(n, name))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The state of one scheduling cycle. Plugins store a few entries each, read on every node,
/// so entries are a short list searched by key rather than a hash map.
#[derive(Default)]
pub struct CycleState {
    data: Vec<(&'static str, Box<dyn StateData>)>,
    /// Plugins whose PreFilter returned Skip: their Filter is not run.
    pub skip_filter: NameSet,
    /// Plugins whose PreScore returned Skip: their Score is not run.
    pub skip_score: NameSet,
}

impl CycleState {
    pub fn new() -> CycleState {
        CycleState::default()
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.data.iter().position(|(k, _)| same(k, key))
    }

    pub fn write<T: StateData>(&mut self, key: &'static str, value: T) {
        match self.position(key) {
            Some(i) => self.data[i].1 = Box::new(value),
            None => self.data.push((key, Box::new(value))),
        }
    }

    pub fn read<T: 'static>(&self, key: &str) -> Option<&T> {
        let (_, data) = self.data.iter().find(|(k, _)| same(k, key))?;
        let data: &dyn StateData = data.as_ref();
        data.as_any().downcast_ref()
    }

    pub fn read_mut<T: 'static>(&mut self, key: &str) -> Option<&mut T> {
        let (_, data) = self.data.iter_mut().find(|(k, _)| same(k, key))?;
        let data: &mut dyn StateData = data.as_mut();
        data.as_any_mut().downcast_mut()
    }

    pub fn delete(&mut self, key: &str) {
        self.data.retain(|(k, _)| !same(k, key));
    }
}

impl Clone for CycleState {
    fn clone(&self) -> Self {
        CycleState {
            data: self
                .data
                .iter()
                .map(|(k, v)| {
                    let data: &dyn StateData = v.as_ref();
                    (*k, data.clone_data())
                })
                .collect(),
            skip_filter: self.skip_filter.clone(),
            skip_score: self.skip_score.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_reads_and_clones() {
        let mut state = CycleState::new();
        state.write("count", 3usize);
        state.write("name", String::from("x"));
        assert_eq!(state.read::<usize>("count"), Some(&3));
        assert_eq!(state.read::<String>("count"), None);
        let mut copy = state.clone();
        if let Some(count) = copy.read_mut::<usize>("count") {
            *count = 4;
        }
        assert_eq!(state.read::<usize>("count"), Some(&3));
        assert_eq!(copy.read::<usize>("count"), Some(&4));
        // A key spelled in another string is the same key; a rewrite replaces.
        let key = String::from("count");
        assert_eq!(state.read::<usize>(&key), Some(&3));
        state.write("count", 5usize);
        assert_eq!(state.read::<usize>("count"), Some(&5));
        state.delete(&key);
        assert_eq!(state.read::<usize>("count"), None);
        assert_eq!(state.read::<String>("name").map(String::as_str), Some("x"));
    }

    #[test]
    fn name_sets() {
        let mut set = NameSet::default();
        assert!(set.is_empty());
        set.insert("A");
        set.insert("A");
        assert!(set.contains("A"));
        assert!(set.contains(&String::from("A")));
        assert!(!set.contains("B"));
    }
}
