import Auth
import ChildProcesses
import Foundation
import Models
import StoreServer
import Testing

/// Keeps `/openapi.yaml` true: every registered route is documented (and nothing else), and
/// real demo responses validate against the document's schemas (Debian's python3-jsonschema
/// and python3-yaml, JSON Schema 2020-12 as OpenAPI 3.1 uses it).
@Suite("the OpenAPI document matches the server")
struct OpenAPITests {
    static let checker = #"""
        import json, sys, yaml
        from jsonschema import Draft202012Validator
        spec = yaml.safe_load(open(sys.argv[1]))
        data = json.load(open(sys.argv[2]))
        problems = []
        if spec.get("openapi") != "3.1.0":
            problems.append("openapi is %r, not 3.1.0" % spec.get("openapi"))
        documented = {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops if m in ("get", "post", "patch", "put", "delete")}
        registered = {tuple(r.split(" ", 1)) for r in data["routes"]}
        for route in sorted(registered - documented):
            problems.append("route %s %s is not in the document" % route)
        for route in sorted(documented - registered):
            problems.append("documented %s %s is not a route" % route)
        for path, ops in spec["paths"].items():
            for method, op in ops.items():
                public = op.get("security") == []
                if public != (("%s %s" % (method.upper(), path)) in data["public"]):
                    problems.append("%s %s: security does not say whether it is public" % (method.upper(), path))
        for sample in data["samples"]:
            schema = dict(spec)
            schema["$ref"] = "#/components/schemas/" + sample["schema"]
            validator = Draft202012Validator(schema)
            for error in validator.iter_errors(sample["body"]):
                problems.append("%s (%s): %s at %s" % (sample["name"], sample["schema"], error.message[:200], list(error.absolute_path)))
        print("\n".join(problems))
        print("checked %d routes and %d samples" % (len(registered), len(data["samples"])))
        sys.exit(1 if problems else 0)
        """#

    static var python: String {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")
            ? "/usr/bin/python3" : "python3"
    }

    @Test("every route is documented and demo responses validate against the schemas")
    func documentMatches() async throws {
        try await withServer(.sqlite) { server, client in
            let spec = try await PlainHTTP.send(
                "GET",
                server.url.appendingPathComponent("openapi.yaml")
            )
            #expect(spec.status == 200)
            #expect(spec.header("content-type")?.hasPrefix("application/yaml") == true)

            var samples: [[String: Any]] = []
            func sample(_ name: String, _ schema: String, _ reply: HTTPReply, status: Int = 200)
                throws
            {
                #expect(reply.status == status, "\(name): \(reply.text)")
                samples.append([
                    "name": name, "schema": schema,
                    "body": try JSONSerialization.jsonObject(with: reply.data),
                ])
            }
            let reservations: Page<ReservationDetail> = try await client.send(
                "GET",
                "/v1/reservations?limit=20"
            ).decode()
            let detail = try #require(reservations.items.first)
            try sample("stores", "StorePage", try await client.send("GET", "/v1/stores"))
            try sample(
                "store",
                "Store",
                try await client.send("GET", "/v1/stores/\(berlin.uuidString)")
            )
            try sample(
                "reservations",
                "ReservationDetailPage",
                try await client.send("GET", "/v1/reservations?limit=20")
            )
            try sample(
                "reservation",
                "ReservationDetail",
                try await client.send("GET", "/v1/reservations/\(detail.id.uuidString)")
            )
            try sample(
                "customers",
                "CustomerPage",
                try await client.send("GET", "/v1/customers?limit=20&store=\(berlin.uuidString)")
            )
            try sample(
                "customer",
                "Customer",
                try await client.send("GET", "/v1/customers/\(detail.customer.id.uuidString)")
            )
            try sample(
                "products",
                "ProductPage",
                try await client.send("GET", "/v1/products?limit=20")
            )

            let products: Page<Product> = try await client.send("GET", "/v1/products?limit=1")
                .decode()
            try sample(
                "product",
                "Product",
                try await client.send("GET", "/v1/products/\(products.items[0].gtin.gtin14)")
            )
            try sample("me", "Associate", try await client.send("GET", "/v1/me"))
            try sample(
                "health",
                "ServerHealth",
                try await PlainHTTP.send("GET", server.url.appendingPathComponent("health"))
            )
            try sample(
                "config",
                "ClientConfigurationResponse",
                try await PlainHTTP.send(
                    "GET",
                    URL(
                        string: server.url.absoluteString
                            + "/v1/config/client?app=scan&version=0.1.0&store=\(perth.uuidString)"
                    )!
                )
            )
            try sample(
                "token",
                "TokenResponse",
                try await PlainHTTP.form(
                    server.url.appendingPathComponent("v1/auth/token"),
                    [
                        ("grant_type", "password"), ("username", DemoData.username),
                        ("password", DemoData.password),
                    ]
                )
            )
            try sample(
                "not found",
                "Problem",
                try await client.send("GET", "/v1/stores/\(UUID().uuidString)"),
                status: 404
            )
            try sample(
                "validation",
                "Problem",
                try await client.send("POST", "/v1/customers", json: #"{"fields": {}}"#),
                status: 422
            )
            try sample(
                "outside opening hours",
                "Problem",
                try await OpeningHoursTests.book(
                    client,
                    "2031-06-01T12:00:00+02:00",
                    "2031-06-01T12:30:00+02:00"
                ),
                status: 422
            )
            let hours = try await client.send("GET", "/v1/stores/\(berlin.uuidString)")
            #expect(hours.text.contains("openingHours"))
            try sample(
                "unsigned",
                "Problem",
                try await PlainHTTP.send("GET", server.url.appendingPathComponent("v1/me")),
                status: 401
            )

            let directory = try TestDatabases.temporaryDirectory("openapi")
            defer { try? FileManager.default.removeItem(at: directory) }
            try spec.data.write(to: directory.appendingPathComponent("openapi.yaml"))
            let input: [String: Any] = [
                "routes": server.routes.map(\.description),
                "public": server.routes.filter(\.isPublic).map(\.description),
                "samples": samples,
            ]
            try JSONSerialization.data(withJSONObject: input).write(
                to: directory.appendingPathComponent("input.json")
            )
            try Data(Self.checker.utf8).write(to: directory.appendingPathComponent("check.py"))
            let run = try await ChildProcess.run(
                URL(fileURLWithPath: "/usr/bin/env"),
                [
                    Self.python, directory.appendingPathComponent("check.py").path,
                    directory.appendingPathComponent("openapi.yaml").path,
                    directory.appendingPathComponent("input.json").path,
                ]
            )
            let (status, output) = (run.status, run.stdout + run.stderr)
            #expect(status == 0, "\(output)")
            #expect(
                output.contains(
                    "checked \(server.routes.count) routes and \(samples.count) samples"
                ),
                "\(output)"
            )
        }
    }
}
