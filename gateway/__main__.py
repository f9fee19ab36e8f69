"""One gateway process, as `serve_processes` starts each of its children: `python -m gateway [ADDRESS]`."""

import asyncio
import sys

from gateway.server import serve
from holistic.process.observability import setup_logging
from holistic.settings import load_settings

settings = load_settings()
setup_logging(settings.log_format, settings.log_level)
asyncio.run(serve(settings, sys.argv[1] if len(sys.argv) > 1 else None))
