//! Who is asking, and may they: authentication (client certificates, bearer tokens,
//! anonymous) and authorization of each request, before it reaches the REST engine.

mod authn;
mod authz;
mod rbac;
mod tokens;

pub use authn::{Authenticator, User};
pub use authz::{Attributes, authorize};
pub use rbac::Rbac;
pub use tokens::TokenFile;
