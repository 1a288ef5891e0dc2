// CCurlLoader has no API: it defines the 23 libcurl functions swift-corelibs-foundation's
// FoundationNetworking calls, and loads libcurl on the first call (curl_loader.c). Linked
// into every app that links FoundationNetworking, so that a start that never makes an https
// request never maps libcurl and its ~30 dependencies.
#ifndef CCURLLOADER_H
#define CCURLLOADER_H
#endif
