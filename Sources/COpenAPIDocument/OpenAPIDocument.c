// store-server's OpenAPI document, compiled in: an installed binary has no SwiftPM resource
// bundle beside it (Bundle.module would stop the process), so the YAML file is embedded at
// build time with C23 #embed. The compiler lists the file among the object's dependencies,
// so an edit of openapi.yaml rebuilds this file; nothing is generated or copied by hand.
#include "COpenAPIDocument.h"

#pragma clang diagnostic ignored "-Wc23-extensions"

static const unsigned char document[] = {
#embed "../StoreServer/openapi.yaml"
};

const unsigned char *shopfloor_openapi_document(void) { return document; }

unsigned long shopfloor_openapi_document_length(void) { return sizeof document; }
