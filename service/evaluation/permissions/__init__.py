"""Who the caller is and what they may do: tokens and the principal behind a request
(``access``), every access rule as a named predicate (``policy``), and the right each
state-changing door needs, asked before the request is read (``doors``)."""
