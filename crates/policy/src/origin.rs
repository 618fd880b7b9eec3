//! Web origins as grant keys: normalised scheme + host + effective port, compared exactly
//! (`000_…` §08: "授权键是规范化 scheme + host + effective port，不是可模糊匹配的域后缀").
//! There is no suffix, wildcard or "same site" matching here, and none should be added.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::REDACTED;
use crate::error::{InvalidUrlReason, PolicyError};
use crate::host::normalise_special_host;
use crate::url::{Body, SplitUrl, clean, parse_port, split};

/// A scheme whose URLs have a tuple (non-opaque) origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    /// `http`, default port 80.
    Http,
    /// `https`, default port 443.
    Https,
    /// `ws`, default port 80.
    Ws,
    /// `wss`, default port 443.
    Wss,
    /// `ftp`, default port 21.
    Ftp,
    /// `app`: a desktop application's identity (`app://<class>`, port 0), what a person grants
    /// for a native window as an origin is granted for a tab. Never a destination of navigation.
    App,
    /// `vm`: a VM guest's identity (`vm://<name>`, port 0), what a person grants for a guest's
    /// screen. Never a destination of navigation.
    Vm,
}

impl Scheme {
    /// The scheme as written in a URL, lower case, without the colon.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Https => "https",
            Self::Ws => "ws",
            Self::Wss => "wss",
            Self::Ftp => "ftp",
            Self::App => "app",
            Self::Vm => "vm",
        }
    }

    /// The port a URL of this scheme uses when it names none.
    pub fn default_port(self) -> u16 {
        match self {
            Self::Http | Self::Ws => 80,
            Self::Https | Self::Wss => 443,
            Self::Ftp => 21,
            Self::App | Self::Vm => 0,
        }
    }

    pub(crate) fn from_lowercase(scheme: &str) -> Option<Self> {
        match scheme {
            "http" => Some(Self::Http),
            "https" => Some(Self::Https),
            "ws" => Some(Self::Ws),
            "wss" => Some(Self::Wss),
            "ftp" => Some(Self::Ftp),
            "app" => Some(Self::App),
            "vm" => Some(Self::Vm),
            _ => None,
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tuple origin: scheme, normalised host and effective port. Two origins are the same
/// grant key exactly when they are equal.
///
/// `Display` prints the canonical key `scheme://host:port` (port always present);
/// [`Origin::serialize_web`] prints what `location.origin` would. Serde uses the web form
/// and accepts any URL [`Origin::parse`] accepts.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Origin {
    scheme: Scheme,
    /// ASCII, lower case, IDN labels as `xn--`, IPv4 dotted, IPv6 in brackets.
    host: String,
    port: u16,
}

impl Origin {
    /// The origin of `url`. Userinfo, path, query and fragment are ignored (and never
    /// kept). `blob:` URLs have the origin of the `http(s)` URL inside them, as in browsers.
    ///
    /// Errors: [`PolicyError::InvalidUrl`] for what cannot be parsed, and
    /// [`PolicyError::OpaqueOrigin`] for `data:`, `about:`, `javascript:`, `file:`,
    /// `chrome:` and every other scheme without a tuple origin.
    pub fn parse(url: &str) -> Result<Self, PolicyError> {
        let cleaned = clean(url);
        let parts = split(&cleaned)?;
        if parts.scheme == "blob" {
            let inner = cleaned.get("blob:".len()..).unwrap_or("");
            return match Self::parse(inner) {
                Ok(origin) if matches!(origin.scheme, Scheme::Http | Scheme::Https) => Ok(origin),
                _ => Err(PolicyError::OpaqueOrigin {
                    scheme: "blob".to_owned(),
                }),
            };
        }
        Self::from_split(&parts)
    }

    pub(crate) fn from_split(parts: &SplitUrl<'_>) -> Result<Self, PolicyError> {
        let Some(scheme) = Scheme::from_lowercase(&parts.scheme) else {
            return Err(PolicyError::OpaqueOrigin {
                scheme: scheme_for_report(&parts.scheme),
            });
        };
        let Body::Authority { host, port, .. } = parts.body else {
            // Unreachable for special schemes, which the splitter always gives an authority.
            return Err(InvalidUrlReason::MissingHost.into());
        };
        if host.is_empty() {
            return Err(InvalidUrlReason::MissingHost.into());
        }
        let host = normalise_special_host(host)?;
        let port = parse_port(port)?.unwrap_or(scheme.default_port());
        Ok(Self { scheme, host, port })
    }

    /// The scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The normalised host: ASCII lower case, `xn--` labels for IDN, dotted IPv4, or an
    /// IPv6 literal in brackets.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The effective port: the explicit one, else the scheme's default.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The origin as browsers print it (`location.origin`): the port only when it is not
    /// the scheme's default, e.g. `https://example.com`, `http://localhost:3000`.
    pub fn serialize_web(&self) -> String {
        if self.port == self.scheme.default_port() {
            format!("{}://{}", self.scheme, self.host)
        } else {
            self.to_string()
        }
    }
}

/// Schemes are short; one that is not is more likely pasted data than a scheme, so it is
/// not repeated in errors or redacted output.
pub(crate) fn scheme_for_report(scheme: &str) -> String {
    if scheme.len() <= 24 {
        scheme.to_owned()
    } else {
        REDACTED.to_owned()
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
    }
}

impl FromStr for Origin {
    type Err = PolicyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl TryFrom<String> for Origin {
    type Error = PolicyError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<Origin> for String {
    fn from(origin: Origin) -> Self {
        origin.serialize_web()
    }
}

/// What a page's origin looks like to script (`location.origin`): the web serialisation of
/// a tuple origin, else `"null"` (opaque origins and unparseable URLs alike).
pub fn web_origin(url: &str) -> String {
    Origin::parse(url).map_or_else(|_| "null".to_owned(), |origin| origin.serialize_web())
}
