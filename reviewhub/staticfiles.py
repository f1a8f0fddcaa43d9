"""WhiteNoise's middleware, able to run in Django's async middleware chain as well as in a sync one.

WhiteNoise's own is sync only: under ASGI, Django then ran every request below it through async_to_sync from
a thread, which the request held to its end, so an async view held a thread too: a long-poll for up to 60 s,
and it could not give its request slot back while it waited (runtime/slots.py). A static file is looked up
and served as WhiteNoise does (the file opened in the request's thread); any other request goes on at once.
"""

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from whitenoise.middleware import WhiteNoiseMiddleware


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    sync_capable = True
    async_capable = True

    def __init__(self, get_response=None, *args, **kwargs):
        super().__init__(get_response, *args, **kwargs)
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self.is_async:
            return self.__acall__(request)
        return super().__call__(request)

    async def __acall__(self, request):
        if self.autorefresh:
            static_file = await sync_to_async(self.find_file)(request.path_info)
        else:
            static_file = self.files.get(request.path_info)
        if static_file is None:
            return await self.get_response(request)
        return await sync_to_async(self.serve)(static_file, request)
