pub struct _Placeholder;
