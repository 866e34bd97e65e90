//! `CycleState`: what plugins compute in one scheduling cycle and pass on to their later
//! extension points (PreFilter → Filter, PreScore → Score), by key. Cloned for preemption's
//! what-if evaluations, so what is stored must be cloneable.

use std::any::Any;
use std::collections::{HashMap, HashSet};

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

/// The state of one scheduling cycle.
#[derive(Default)]
pub struct CycleState {
    data: HashMap<&'static str, Box<dyn StateData>>,
    /// Plugins whose PreFilter returned Skip: their Filter is not run.
    pub skip_filter: HashSet<&'static str>,
    /// Plugins whose PreScore returned Skip: their Score is not run.
    pub skip_score: HashSet<&'static str>,
}

impl CycleState {
    pub fn new() -> CycleState {
        CycleState::default()
    }

    pub fn write<T: StateData>(&mut self, key: &'static str, value: T) {
        self.data.insert(key, Box::new(value));
    }

    pub fn read<T: 'static>(&self, key: &str) -> Option<&T> {
        let data: &dyn StateData = self.data.get(key)?.as_ref();
        data.as_any().downcast_ref()
    }

    pub fn read_mut<T: 'static>(&mut self, key: &str) -> Option<&mut T> {
        let data: &mut dyn StateData = self.data.get_mut(key)?.as_mut();
        data.as_any_mut().downcast_mut()
    }

    pub fn delete(&mut self, key: &str) {
        self.data.remove(key);
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
    }
}
