"""The portal's pages, one controller per family of pages; each handler is a method of its own.

Handlers read through the use cases of :mod:`service.evaluation` with the request's unit of
work (``uow``) and the signed-in visitor (``viewer``); state-changing forms arrive as the
CSRF-checked ``form``. No handler commits or sends work to the workers: the unit of work does
both after the handler returns.
"""
