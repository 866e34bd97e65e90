//! kube-controller-manager's volume controllers: [`persistentvolume`], the
//! PersistentVolume/PersistentVolumeClaim binder.

pub mod persistentvolume;
