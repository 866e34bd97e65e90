//! Objects as informers read them: everything but `metadata.managedFields`, which no
//! controller or scheduler looks at and which costs as much to
//! parse (and to keep, for every cached Node and Pod) as the rest of the metadata together.
//! [`Slim`] wraps any deserializable kind (k8s-openapi's, a custom resource's,
//! `DynamicObject`), deserializes it skipping that field, and is a resource of the same kind
//! for kube-rs (`Api<Slim<Pod>>`).
//!
//! The field is skipped without knowing the kind: the kind's own `Deserialize` reads through
//! a deserializer that hands it the top-level object's entries unchanged, except that the
//! `metadata` entry is read through a second one leaving out `managedFields` (skipped as
//! unparsed JSON, like an unknown field).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{
    DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

/// A Kubernetes object read without its managed fields.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Slim<K>(pub K);

impl<K> Slim<K> {
    pub fn into_inner(self) -> K {
        self.0
    }
}

impl<'de, K: Deserialize<'de>> Deserialize<'de> for Slim<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        K::deserialize(Skipping::<D, Object>::new(deserializer)).map(Slim)
    }
}

/// Where in the object a [`Skipping`] deserializer reads, as a type: only the object's and
/// the metadata's own maps are read through the level's entries, every value below them by
/// the input's deserializer as it is (so their code is not generated again).
trait Level<'de> {
    type Entries<A: MapAccess<'de>>: MapAccess<'de, Error = A::Error>;
    fn entries<A: MapAccess<'de>>(map: A) -> Self::Entries<A>;
}

/// The object: its `metadata` entry is read at [`Metadata`] level.
struct Object;

impl<'de> Level<'de> for Object {
    type Entries<A: MapAccess<'de>> = ObjectEntries<A>;

    fn entries<A: MapAccess<'de>>(map: A) -> ObjectEntries<A> {
        ObjectEntries {
            inner: map,
            metadata_next: false,
        }
    }
}

/// The metadata: `managedFields` is left out.
struct Metadata;

impl<'de> Level<'de> for Metadata {
    type Entries<A: MapAccess<'de>> = MetadataEntries<A>;

    fn entries<A: MapAccess<'de>>(map: A) -> MetadataEntries<A> {
        MetadataEntries(map)
    }
}

/// A deserializer handing maps on as its level's entries (see the module documentation).
struct Skipping<D, L> {
    inner: D,
    level: PhantomData<L>,
}

impl<D, L> Skipping<D, L> {
    fn new(inner: D) -> Skipping<D, L> {
        Skipping {
            inner,
            level: PhantomData,
        }
    }
}

/// Forwards deserializer methods; `wrapped` ones with the visitor wrapped (those that may
/// reach a map), `untouched` ones as they are.
macro_rules! forward {
    (wrapped: $($method:ident ($($arg:ident : $ty:ty),*);)*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            self.inner.$method($($arg,)* Visiting::<V, L>::new(visitor))
        }
    )*};
    (untouched: $($method:ident ($($arg:ident : $ty:ty),*);)*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            self.inner.$method($($arg,)* visitor)
        }
    )*};
}

impl<'de, D: Deserializer<'de>, L: Level<'de>> Deserializer<'de> for Skipping<D, L> {
    type Error = D::Error;

    forward! { wrapped:
        deserialize_any(); deserialize_map(); deserialize_option();
        deserialize_newtype_struct(name: &'static str);
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
    }

    forward! { untouched:
        deserialize_bool(); deserialize_i8(); deserialize_i16(); deserialize_i32();
        deserialize_i64(); deserialize_i128(); deserialize_u8(); deserialize_u16();
        deserialize_u32(); deserialize_u64(); deserialize_u128(); deserialize_f32();
        deserialize_f64(); deserialize_char(); deserialize_str(); deserialize_string();
        deserialize_bytes(); deserialize_byte_buf(); deserialize_unit(); deserialize_seq();
        deserialize_identifier(); deserialize_ignored_any();
        deserialize_unit_struct(name: &'static str);
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

/// A visitor handing maps on as its level's entries; everything else reaches the kind's
/// visitor as it is.
struct Visiting<V, L> {
    inner: V,
    level: PhantomData<L>,
}

impl<V, L> Visiting<V, L> {
    fn new(inner: V) -> Visiting<V, L> {
        Visiting {
            inner,
            level: PhantomData,
        }
    }
}

/// Forwards visitor methods taking one value.
macro_rules! forward_visits {
    ($($method:ident($ty:ty);)*) => {$(
        fn $method<E: serde::de::Error>(self, v: $ty) -> Result<V::Value, E> {
            self.inner.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>, L: Level<'de>> Visitor<'de> for Visiting<V, L> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(L::entries(map))
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.inner.visit_some(Skipping::<D, L>::new(d))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.inner.visit_newtype_struct(Skipping::<D, L>::new(d))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.inner.visit_seq(seq)
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.inner.visit_enum(data)
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_unit()
    }

    forward_visits! {
        visit_bool(bool); visit_i64(i64); visit_u64(u64); visit_i128(i128); visit_u128(u128);
        visit_f64(f64); visit_str(&str); visit_borrowed_str(&'de str); visit_string(String);
        visit_bytes(&[u8]); visit_borrowed_bytes(&'de [u8]); visit_byte_buf(Vec<u8>);
    }
}

/// Hands `key` to `seed`, borrowed from the input if it was.
fn key_to<'de, T: DeserializeSeed<'de>, E: serde::de::Error>(
    seed: T,
    key: Cow<'de, str>,
) -> Result<T::Value, E> {
    match key {
        Cow::Borrowed(key) => seed.deserialize(BorrowedStrDeserializer::new(key)),
        Cow::Owned(key) => seed.deserialize(StringDeserializer::new(key)),
    }
}

/// The object's entries: the `metadata` value is read at [`Metadata`] level, the others
/// as they are.
struct ObjectEntries<A> {
    inner: A,
    /// The key just read was `metadata`.
    metadata_next: bool,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for ObjectEntries<A> {
    type Error = A::Error;

    fn next_key_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        let Some(key) = self.inner.next_key_seed(Key)? else {
            return Ok(None);
        };
        self.metadata_next = key == "metadata";
        key_to(seed, key).map(Some)
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        // Only a value the size of `ObjectMeta` may be the metadata the level is for: for
        // every other field's type the compiler generates no metadata-level code (the
        // condition is a constant). A metadata of another type is read as it is.
        let metadata = std::mem::take(&mut self.metadata_next);
        if const { size_of::<T::Value>() == size_of::<ObjectMeta>() } && metadata {
            self.inner.next_value_seed(MetadataSeed(seed))
        } else {
            self.inner.next_value_seed(seed)
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

/// The metadata's entries, but `managedFields` (skipped unparsed).
struct MetadataEntries<A>(A);

impl<'de, A: MapAccess<'de>> MapAccess<'de> for MetadataEntries<A> {
    type Error = A::Error;

    fn next_key_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        loop {
            let Some(key) = self.0.next_key_seed(Key)? else {
                return Ok(None);
            };
            if key == "managedFields" {
                self.0.next_value::<IgnoredAny>()?;
                continue;
            }
            return key_to(seed, key).map(Some);
        }
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(seed)
    }
}

/// A map key, borrowed from the input where it can be.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v))
    }
}

/// Reads the value `T` expects at [`Metadata`] level.
struct MetadataSeed<T>(T);

impl<'de, T: DeserializeSeed<'de>> DeserializeSeed<'de> for MetadataSeed<T> {
    type Value = T::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T::Value, D::Error> {
        self.0.deserialize(Skipping::<D, Metadata>::new(d))
    }
}

/// The same resource as the kind it wraps; its scope is left open so that an informer can
/// watch one namespace of any kind (`Api::namespaced_with`).
impl<K: kube::Resource> kube::Resource for Slim<K> {
    type DynamicType = K::DynamicType;
    type Scope = kube::core::DynamicResourceScope;

    fn kind(dt: &K::DynamicType) -> Cow<'_, str> {
        K::kind(dt)
    }

    fn group(dt: &K::DynamicType) -> Cow<'_, str> {
        K::group(dt)
    }

    fn version(dt: &K::DynamicType) -> Cow<'_, str> {
        K::version(dt)
    }

    fn api_version(dt: &K::DynamicType) -> Cow<'_, str> {
        K::api_version(dt)
    }

    fn plural(dt: &K::DynamicType) -> Cow<'_, str> {
        K::plural(dt)
    }

    fn url_path(dt: &K::DynamicType, namespace: Option<&str>) -> String {
        K::url_path(dt, namespace)
    }

    fn metadata_api() -> bool {
        K::metadata_api()
    }

    fn meta(&self) -> &ObjectMeta {
        self.0.meta()
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.0.meta_mut()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, Secret};
    use kube::api::DynamicObject;
    use serde_json::json;

    fn managed_fields() -> serde_json::Value {
        json!([{"manager": "kubectl", "operation": "Update",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {}}}])
    }

    #[test]
    fn everything_but_managed_fields() {
        let object = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": "p", "namespace": "ns", "uid": "u-1", "resourceVersion": "7",
                "labels": {"app": "x"}, "annotations": {"a": "b"},
                "creationTimestamp": "2026-11-23T10:00:00Z",
                "deletionTimestamp": "2026-11-23T11:00:00Z", "deletionGracePeriodSeconds": 30,
                "finalizers": ["f"], "generateName": "p-", "generation": 2,
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                    "uid": "u-2", "controller": true}],
                "managedFields": managed_fields(),
            },
            "spec": {"containers": [{"name": "c", "image": "busybox"}], "nodeName": "n"},
            "status": {"phase": "Pending"},
        });
        let mut full: Pod = serde_json::from_value(object.clone()).unwrap();
        let slim: Slim<Pod> = serde_json::from_value(object.clone()).unwrap();
        assert!(full.metadata.managed_fields.take().is_some());
        assert_eq!(slim.0, full);
        // From bytes, as the watch reads them (keys borrowed from the input).
        let bytes = serde_json::to_vec(&object).unwrap();
        let slim: Slim<Pod> = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(slim.0, full);
        let node: Slim<Node> = serde_json::from_value(
            json!({"metadata": {"name": "n"}, "spec": {"unschedulable": true}}),
        )
        .unwrap();
        assert_eq!(node.0.metadata.name.as_deref(), Some("n"));
        assert_eq!(node.0.spec.and_then(|s| s.unschedulable), Some(true));
        assert!(serde_json::from_value::<Slim<Pod>>(json!({"metadata": 3})).is_err());
        assert!(serde_json::from_value::<Slim<Pod>>(json!({"spec": 3})).is_err());
        assert!(serde_json::from_value::<Slim<Pod>>(json!([])).is_err());
        assert!(serde_json::from_value::<Slim<Pod>>(json!({})).is_ok());
    }

    #[test]
    fn any_kind_reads_slim() {
        // Kinds without spec and status, with binary data, and a dynamic object.
        let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "ns", "managedFields": managed_fields()},
            "data": {"metadata": "kept", "managedFields": "kept"}});
        let slim: Slim<ConfigMap> = serde_json::from_value(config_map.clone()).unwrap();
        let mut full: ConfigMap = serde_json::from_value(config_map).unwrap();
        full.metadata.managed_fields = None;
        assert_eq!(slim.0, full);
        assert_eq!(slim.0.data.unwrap()["managedFields"], "kept");
        let secret = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "managedFields": managed_fields()},
            "data": {"k": "aGVsbG8="}, "type": "Opaque"});
        let slim: Slim<Secret> = serde_json::from_value(secret).unwrap();
        assert_eq!(slim.0.data.unwrap()["k"].0, b"hello");
        assert!(slim.0.metadata.managed_fields.is_none());
        let group = json!({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "ns", "labels": {"a": "b"},
                "managedFields": managed_fields()},
            "spec": {"minMember": 3, "metadata": {"managedFields": "kept"}}});
        let slim: Slim<DynamicObject> =
            serde_json::from_slice(&serde_json::to_vec(&group).unwrap()).unwrap();
        let mut full: DynamicObject = serde_json::from_value(group).unwrap();
        assert!(full.metadata.managed_fields.take().is_some());
        assert_eq!(slim.0, full);
        assert_eq!(slim.0.data["spec"]["metadata"]["managedFields"], "kept");
        assert_eq!(slim.0.types.unwrap().kind, "PodGroup");
    }

    #[test]
    fn the_same_resource_for_kube() {
        use kube::Resource;
        assert_eq!(Slim::<Pod>::plural(&()), "pods");
        assert_eq!(Slim::<Node>::kind(&()), "Node");
        assert_eq!(Slim::<Pod>::api_version(&()), "v1");
        let resource = kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("scheduling.x-k8s.io", "v1alpha1", "PodGroup"),
            "podgroups",
        );
        assert_eq!(
            Slim::<DynamicObject>::url_path(&resource, Some("ns")),
            "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ns/podgroups"
        );
    }
}
