/** The data model, as the reference's interfaces and the server's camelCase JSON give it. */
export {};
