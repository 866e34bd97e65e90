//! Who is asking, and may they: authentication (client certificates, bearer tokens,
//! anonymous), impersonation, and authorization of each request, before it reaches the
//! REST engine.

mod authn;
mod authz;
mod impersonation;
mod node;
mod rbac;
mod service_account;
mod tokens;

pub use authn::{Authenticator, RequestAuthenticator};
pub use authz::{Attributes, Authorizer, resource_attributes};
pub use impersonation::impersonate;
pub use kyb_serving::User;
pub use kyb_serving::user::AUTHENTICATED;
pub use node::NodeAuthorizer;
pub use rbac::Rbac;
pub use service_account::{BoundObject, IssuerDiscovery, ServiceAccountTokens, TokenSpec};
pub(crate) use service_account::{DEFAULT_EXPIRATION, MIN_EXPIRATION};
pub use tokens::TokenFile;
