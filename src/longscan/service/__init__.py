"""The HTTP service and web page (``longscan serve``): documents in a memory bank,
questions answered with evidence the page highlights in the text."""

from longscan.service.app import create_app
from longscan.service.settings import ServiceSettings, is_loopback

__all__ = ["ServiceSettings", "create_app", "is_loopback"]
