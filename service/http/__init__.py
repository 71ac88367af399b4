"""What the JSON API (service.api) and the portal (service.portal) share: a request's unit of
work (one session, committed once, follow-ups sent after the commit), the caller behind a
request, and how any exception becomes a problem for the caller to read."""
